// dump.js reads partitions of a topic from offset 0 up to given end offsets with
// KafkaJS (a consumer group of its own, since KafkaJS has no group-less consumer) and
// prints one line per record:
//
//   node dump.js BOOTSTRAP TOPIC GROUP END0 [END1 ...]
//
// Each line is "PARTITION OFFSET KEY VALUE", with NULL for a null key or value. The
// compaction test (compat-tests/compaction_test.go) compares the output with what
// franz-go reads. It exits non-zero when a partition is not read to its end in 60 s.
'use strict'

const { Kafka, logLevel } = require('kafkajs')

const [bootstrap, topic, group, ...endArgs] = process.argv.slice(2)
const ends = endArgs.map(Number)
const text = (b) => (b === null ? 'NULL' : b.toString())

async function main () {
  const kafka = new Kafka({ clientId: 'samsa-dump', brokers: [bootstrap], logLevel: logLevel.WARN })
  const consumer = kafka.consumer({ groupId: group, sessionTimeout: 10000, heartbeatInterval: 500 })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const out = []
  const done = new Set()
  let finish
  const finished = new Promise((resolve) => { finish = resolve })
  const timer = setTimeout(() => finish(false), 60000)
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      out.push(`${partition} ${message.offset} ${text(message.key)} ${text(message.value)}`)
      if (Number(message.offset) === ends[partition] - 1) {
        done.add(partition)
        if (done.size === ends.length) finish(true)
      }
    }
  })
  const ok = await finished
  clearTimeout(timer)
  await consumer.disconnect()
  if (!ok) {
    console.error(`timed out; partitions done: ${[...done].sort()}`)
    process.exit(1)
  }
  // Records of different partitions interleave; the Go side groups them.
  console.log(out.join('\n'))
}

main().catch((e) => { console.error(e); process.exit(1) })
