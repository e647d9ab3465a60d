// kafkajs.js drives a samsa broker with KafkaJS and exits non-zero on any failed check.
//
//   node kafkajs.js BOOTSTRAP TOPIC_PREFIX
//
// It checks the admin API (createTopics, fetchTopicMetadata, fetchTopicOffsets,
// describeConfigs, alterConfigs, fetchTopicOffsetsByTimestamp, deleteTopics) and
// produces RECORDS records with acks=-1 to PREFIX-<codec> for every codec
// (none, gzip, snappy, lz4, zstd; see codecs.js).
//
// Reading the data back with KafkaJS needs consumer groups (JoinGroup, SyncGroup,
// Heartbeat, OffsetFetch...), since KafkaJS has no group-less consumer. That part runs
// only when SAMSA_HAS_GROUPS=1 (the Go wrapper sets it when the broker's ApiVersions
// lists JoinGroup). The produced topics are left in place so that the Go wrapper can
// read them back by partition and offset with franz-go either way.
//
// Record layout, shared with compat-tests/scripts_test.go (verifyLayout):
// record i in [0, RECORDS) goes to partition i % 6 with key "key-<i>", value
// "<codec>-<i>-<filler>", header src=kafkajs and timestamp BASE + i.
'use strict'

const { Kafka, CompressionTypes, ConfigResourceTypes, logLevel } = require('kafkajs')
const codecs = require('./codecs')

const PARTITIONS = 6
const RECORDS = 10000
const CHUNK = 500
const FILLER = 'samsa-compat-payload-'.repeat(4)
const CODECS = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4,
  zstd: CompressionTypes.ZSTD
}

const [bootstrap, prefix] = process.argv.slice(2)
if (!bootstrap || !prefix) {
  console.error('usage: node kafkajs.js BOOTSTRAP TOPIC_PREFIX')
  process.exit(2)
}

let failures = 0
function check (ok, what) {
  if (ok) {
    console.log(`ok   ${what}`)
  } else {
    failures++
    console.log(`FAIL ${what}`)
  }
}

function value (codec, i) {
  return `${codec}-${i}-${FILLER}`
}

// expectedBefore is how many records of partition p have index < n.
function expectedBefore (p, n) {
  return n > p ? Math.ceil((n - p) / PARTITIONS) : 0
}

// waitFor polls fn until it returns true or the deadline passes.
async function waitFor (fn, ms) {
  const deadline = Date.now() + ms
  for (;;) {
    if (await fn()) return true
    if (Date.now() > deadline) return false
    await new Promise(resolve => setTimeout(resolve, 100))
  }
}

async function adminChecks (admin, topics) {
  const created = await admin.createTopics({
    waitForLeaders: true,
    topics: topics.map(topic => ({ topic, numPartitions: PARTITIONS, replicationFactor: 1 }))
  })
  check(created === true, `createTopics ${topics.length} topics with ${PARTITIONS} partitions`)
  const again = await admin.createTopics({ topics: [{ topic: topics[0], numPartitions: PARTITIONS }] })
  check(again === false, 'createTopics on an existing topic reports not created (TOPIC_ALREADY_EXISTS)')

  const md = await admin.fetchTopicMetadata({ topics })
  for (const topic of topics) {
    const t = md.topics.find(x => x.name === topic)
    check(t && t.partitions.length === PARTITIONS, `fetchTopicMetadata ${topic}: ${t ? t.partitions.length : 'no'} partitions`)
    if (t) {
      const good = t.partitions.every(p => p.partitionErrorCode === 0 && p.leader === md.topics[0].partitions[0].leader && p.leader >= 0)
      check(good, `fetchTopicMetadata ${topic}: every partition has a leader and no error`)
    }
  }

  const adminTopic = `${prefix}-admin`
  await admin.createTopics({
    waitForLeaders: true,
    topics: [{ topic: adminTopic, numPartitions: 2, replicationFactor: 1, configEntries: [{ name: 'retention.ms', value: '86400000' }] }]
  })
  const retention = async () => {
    const res = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: adminTopic, configNames: ['retention.ms', 'cleanup.policy'] }]
    })
    const r = res.resources[0]
    if (r.errorCode !== 0) return `error ${r.errorCode}`
    const e = r.configEntries.find(x => x.configName === 'retention.ms')
    return e ? e.configValue : 'missing'
  }
  let got = await retention()
  check(got === '86400000', `describeConfigs ${adminTopic} retention.ms = ${got} (set at create)`)

  await admin.alterConfigs({
    validateOnly: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: adminTopic, configEntries: [{ name: 'retention.ms', value: '7200000' }] }]
  })
  got = await retention()
  check(got === '7200000', `alterConfigs then describeConfigs ${adminTopic} retention.ms = ${got}`)

  const broker = await admin.describeConfigs({
    includeSynonyms: false,
    resources: [{ type: ConfigResourceTypes.BROKER, name: String(md.topics[0].partitions[0].leader) }]
  })
  const br = broker.resources[0]
  check(br.errorCode === 0 && br.configEntries.length > 0, `describeConfigs broker ${br.resourceName}: ${br.configEntries.length} entries`)

  await admin.deleteTopics({ topics: [adminTopic], timeout: 10000 })
  const gone = await waitFor(async () => !(await admin.listTopics()).includes(adminTopic), 10000)
  check(gone, `deleteTopics ${adminTopic}: no longer listed`)
}

async function produce (producer, codec, topic, base) {
  const started = Date.now()
  for (let start = 0; start < RECORDS; start += CHUNK) {
    const messages = []
    for (let i = start; i < Math.min(start + CHUNK, RECORDS); i++) {
      messages.push({
        partition: i % PARTITIONS,
        key: `key-${i}`,
        value: value(codec, i),
        timestamp: String(base + i),
        headers: { src: 'kafkajs' }
      })
    }
    const res = await producer.send({ topic, acks: -1, compression: CODECS[codec], messages })
    for (const r of res) {
      if (r.errorCode !== 0) throw new Error(`produce ${topic}[${r.partition}]: error ${r.errorCode}`)
    }
  }
  console.log(`     produced ${RECORDS} records to ${topic} with ${codec} in ${Date.now() - started} ms`)
}

async function offsetChecks (admin, topic, base) {
  const offsets = await admin.fetchTopicOffsets(topic)
  for (let p = 0; p < PARTITIONS; p++) {
    const o = offsets.find(x => x.partition === p)
    const want = expectedBefore(p, RECORDS)
    check(o && Number(o.high) === want && Number(o.low) === 0, `fetchTopicOffsets ${topic}[${p}]: low ${o && o.low} high ${o && o.high}, want 0..${want}`)
  }
  const mid = RECORDS / 2
  const byTime = await admin.fetchTopicOffsetsByTimestamp(topic, base + mid)
  const good = byTime.length === PARTITIONS && byTime.every(o => Number(o.offset) === expectedBefore(o.partition, mid))
  check(good, `fetchTopicOffsetsByTimestamp ${topic} at BASE+${mid}: ${JSON.stringify(byTime.map(o => o.offset))}`)
}

async function consumeChecks (kafka, topics) {
  const consumer = kafka.consumer({ groupId: `${prefix}-group`, maxWaitTimeInMs: 500 })
  await consumer.connect()
  const seen = new Map() // topic -> array per partition of record indexes
  let total = 0
  let bad = 0
  for (const topic of topics) {
    seen.set(topic, Array.from({ length: PARTITIONS }, () => []))
    await consumer.subscribe({ topic, fromBeginning: true })
  }
  await consumer.run({
    eachMessage: async ({ topic, partition, message }) => {
      const codec = topic.slice(prefix.length + 1)
      const list = seen.get(topic)[partition]
      const i = Number(message.key.toString().slice(4))
      if (message.value.toString() !== value(codec, i) || Number(message.offset) !== list.length || i % PARTITIONS !== partition) bad++
      list.push(i)
      total++
    }
  })
  const done = await waitFor(() => total >= RECORDS * topics.length, 60000)
  await consumer.disconnect()
  check(done, `consumer group read ${total} of ${RECORDS * topics.length} records`)
  check(bad === 0, `consumer group records match content, partition and offset (${bad} mismatches)`)
  for (const [topic, parts] of seen) {
    const ordered = parts.every((list, p) => list.every((i, n) => i === p + n * PARTITIONS))
    check(ordered, `consumer group ${topic}: per-partition order`)
  }
}

async function main () {
  await codecs.register()
  const kafka = new Kafka({ clientId: 'samsa-compat-kafkajs', brokers: [bootstrap], logLevel: logLevel.WARN, retry: { retries: 3 } })
  const admin = kafka.admin()
  await admin.connect()
  const topics = Object.keys(CODECS).map(c => `${prefix}-${c}`)
  await adminChecks(admin, topics)

  const producer = kafka.producer({ allowAutoTopicCreation: false })
  await producer.connect()
  const base = Date.now() - 3600 * 1000
  for (const codec of Object.keys(CODECS)) {
    const topic = `${prefix}-${codec}`
    try {
      await produce(producer, codec, topic, base)
      check(true, `produce ${RECORDS} records acks=-1 ${codec}`)
    } catch (err) {
      check(false, `produce ${codec}: ${err.message}`)
      continue
    }
    await offsetChecks(admin, topic, base)
  }
  await producer.disconnect()

  if (process.env.SAMSA_HAS_GROUPS === '1') {
    await consumeChecks(kafka, topics)
  } else {
    console.log('skip consumer: SAMSA_HAS_GROUPS is not 1 (broker has no JoinGroup); the Go wrapper reads the data back')
  }
  await admin.disconnect()
  console.log(failures === 0 ? 'kafkajs: all checks passed' : `kafkajs: ${failures} checks failed`)
  process.exitCode = failures === 0 ? 0 : 1
}

main().catch(err => {
  console.error('kafkajs: fatal:', err && err.stack ? err.stack : err)
  process.exit(1)
})
