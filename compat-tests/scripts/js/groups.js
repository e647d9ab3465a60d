// groups.js runs the consumer-group scenario with KafkaJS against a samsa broker and
// exits non-zero on any failed check.
//
//   node groups.js BOOTSTRAP TOPIC
//
// TOPIC must exist with PARTITIONS partitions (the Go wrapper, groups_scripts_test.go,
// creates it with kadm). Three consumers join group A; once DescribeGroups shows the
// group Stable with all three and every partition assigned once, BATCH records are
// produced (record i of a batch to partition i % PARTITIONS). Each consumer records
// (member, partition, offset, value) for every message. Checks: every record of the
// batch consumed exactly once, each partition consumed by the member the broker
// assigned it to. Once group A's committed offsets reach the end offsets, one member
// disconnects (LeaveGroup); after the two left are Stable with all partitions, a second
// batch is produced and must be consumed exactly once by them, with no record of the
// first batch delivered again. Finally one consumer in group B reads both batches from
// the start, each record once. Every wait has a deadline; the whole run has one too.
'use strict'

const { Kafka, AssignerProtocol, logLevel } = require('kafkajs')

const PARTITIONS = 12
const BATCH = 3000
const WAIT_MS = 60000
const RUN_MS = 240000

const [bootstrap, topic] = process.argv.slice(2)
if (!bootstrap || !topic) {
  console.error('usage: node groups.js BOOTSTRAP TOPIC')
  process.exit(2)
}

const runTimer = setTimeout(() => {
  console.error(`FAIL: whole run exceeded ${RUN_MS} ms`)
  process.exit(1)
}, RUN_MS)

let failures = 0
function check (ok, what) {
  if (ok) {
    console.log('ok   ' + what)
  } else {
    failures++
    console.log('FAIL ' + what)
  }
  return ok
}

// waitFor polls cond every 20 ms until it returns a truthy value, or throws after ms.
async function waitFor (what, ms, cond) {
  const deadline = Date.now() + ms
  let last
  for (;;) {
    try {
      const v = await cond()
      if (v) return v
    } catch (e) {
      last = e
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? ': ' + last.message : ''}`)
    }
    await new Promise(resolve => setTimeout(resolve, 20))
  }
}

const kafka = new Kafka({
  clientId: 'samsa-groups-js',
  brokers: [bootstrap],
  logLevel: logLevel.WARN,
  retry: { retries: 8 }
})

// sink collects what the members of one group consumed.
function newSink () {
  return { recs: [] }
}

async function startMember (group, name, sink, fromBeginning) {
  const consumer = kafka.consumer({
    groupId: group,
    sessionTimeout: 10000,
    rebalanceTimeout: 10000,
    heartbeatInterval: 500,
    maxWaitTimeInMs: 250,
    retry: { retries: 8 }
  })
  const member = { name, consumer, joins: 0, assigned: [] }
  consumer.on(consumer.events.GROUP_JOIN, e => {
    member.joins++
    member.assigned = (e.payload.memberAssignment[topic] || []).slice().sort((a, b) => a - b)
    console.log(`${name} joined ${group}: generation member ${e.payload.memberId}, partitions ${member.assigned}`)
  })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning })
  await consumer.run({
    autoCommit: true,
    eachMessage: async ({ partition, message }) => {
      sink.recs.push({ member: name, partition, offset: Number(message.offset), value: message.value.toString() })
    }
  })
  return member
}

// stableOwners describes the group and returns partition -> member id when it is Stable
// with exactly n members and every partition assigned to exactly one of them.
async function stableOwners (admin, group, n) {
  const { groups } = await admin.describeGroups([group])
  const g = groups[0]
  if (!g || g.state !== 'Stable' || g.members.length !== n) return null
  const owners = new Map()
  for (const m of g.members) {
    const a = AssignerProtocol.MemberAssignment.decode(m.memberAssignment)
    for (const p of (a && a.assignment[topic]) || []) {
      if (owners.has(p)) return null
      owners.set(p, m.memberId)
    }
  }
  return owners.size === PARTITIONS ? owners : null
}

// waitStable waits until the broker and the clients' GROUP_JOIN events agree on one
// assignment of all partitions over the given members.
async function waitStable (admin, group, members) {
  return waitFor(`group ${group} stable with ${members.map(m => m.name)}`, WAIT_MS, async () => {
    const owners = await stableOwners(admin, group, members.length)
    if (!owners) return null
    const local = new Map()
    for (const m of members) {
      for (const p of m.assigned) {
        if (local.has(p)) return null
        local.set(p, m.name)
      }
    }
    if (local.size !== PARTITIONS) return null
    // The broker's member ids and the clients' names must pair up one to one.
    const pairs = new Map()
    for (const [p, id] of owners) {
      const name = local.get(p)
      if (pairs.has(id) && pairs.get(id) !== name) return null
      pairs.set(id, name)
    }
    if (new Set(pairs.values()).size !== pairs.size) return null
    return local
  })
}

async function produceBatch (producer, tag) {
  const byPartition = new Map()
  const values = []
  for (let i = 0; i < BATCH; i++) {
    const p = i % PARTITIONS
    const v = `${tag}-${i}`
    values.push(v)
    if (!byPartition.has(p)) byPartition.set(p, [])
    byPartition.get(p).push({ key: v, value: v, partition: p })
  }
  const messages = [...byPartition.values()].flat()
  for (let i = 0; i < messages.length; i += 500) {
    await producer.send({ topic, acks: -1, messages: messages.slice(i, i + 500) })
  }
  return values
}

async function endOffsets (admin) {
  const m = new Map()
  for (const o of await admin.fetchTopicOffsets(topic)) m.set(o.partition, Number(o.high))
  return m
}

// checkOnce checks that recs (filtered by value prefix tags) are exactly want, each
// once, and that each partition's records came from the member that owned it.
function checkOnce (what, recs, want, owners) {
  const count = new Map()
  for (const r of recs) count.set(r.value, (count.get(r.value) || 0) + 1)
  let missing = 0; let dup = 0; let extra = 0
  const wantSet = new Set(want)
  for (const v of want) {
    const n = count.get(v) || 0
    if (n === 0) missing++
    if (n > 1) dup++
  }
  for (const v of count.keys()) if (!wantSet.has(v)) extra++
  check(missing === 0 && dup === 0 && extra === 0,
    `${what}: ${want.length} records each consumed once (missing ${missing}, duplicated ${dup}, unexpected ${extra})`)
  const keys = new Set()
  for (const r of recs) keys.add(`${r.partition}/${r.offset}`)
  check(keys.size === recs.length, `${what}: no (partition, offset) delivered twice (${recs.length} deliveries, ${keys.size} distinct)`)
  if (owners) {
    const seenBy = new Map()
    let wrong = 0
    for (const r of recs) {
      if (!seenBy.has(r.partition)) seenBy.set(r.partition, new Set())
      seenBy.get(r.partition).add(r.member)
      if (owners.get(r.partition) !== r.member) wrong++
    }
    let shared = 0
    for (const s of seenBy.values()) if (s.size > 1) shared++
    check(shared === 0 && wrong === 0,
      `${what}: no partition consumed by two members (${shared} shared, ${wrong} records off their assigned member)`)
  }
}

async function main () {
  const admin = kafka.admin()
  await admin.connect()
  const producer = kafka.producer()
  await producer.connect()
  const members = []
  const groupA = `${topic}-a`
  const groupB = `${topic}-b`
  try {
    await waitFor(`${topic} with ${PARTITIONS} partitions`, WAIT_MS, async () => {
      const md = await admin.fetchTopicMetadata({ topics: [topic] })
      return md.topics[0].partitions.length === PARTITIONS
    })

    const sinkA = newSink()
    let t0 = Date.now()
    for (const name of ['c1', 'c2', 'c3']) members.push(await startMember(groupA, name, sinkA, true))
    let owners = await waitStable(admin, groupA, members)
    console.log(`group ${groupA}: 3 members stable in ${Date.now() - t0} ms: ${JSON.stringify([...owners].sort((a, b) => a[0] - b[0]))}`)

    // Batch 1: three members.
    const batch1 = await produceBatch(producer, 'b1')
    const ends1 = await endOffsets(admin)
    t0 = Date.now()
    await waitFor(`${groupA} to consume batch 1`, WAIT_MS, () => sinkA.recs.length >= BATCH)
    console.log(`batch 1 consumed in ${Date.now() - t0} ms`)
    await waitFor(`${groupA} commits to reach the end offsets`, WAIT_MS, async () => {
      const got = await admin.fetchOffsets({ groupId: groupA, topics: [topic] })
      return got[0].partitions.every(p => Number(p.offset) === ends1.get(p.partition))
    })
    checkOnce('batch 1, 3 members', sinkA.recs, batch1, owners)
    const n1 = sinkA.recs.length

    // One member leaves; the other two take over its partitions.
    const leaver = members.pop()
    t0 = Date.now()
    await leaver.consumer.disconnect()
    owners = await waitStable(admin, groupA, members)
    console.log(`${leaver.name} left; 2 members stable in ${Date.now() - t0} ms: ${JSON.stringify([...owners].sort((a, b) => a[0] - b[0]))}`)
    check(members.every(m => m.joins >= 2), `remaining members rejoined after ${leaver.name} left`)

    const batch2 = await produceBatch(producer, 'b2')
    t0 = Date.now()
    await waitFor(`${groupA} to consume batch 2`, WAIT_MS, () => sinkA.recs.length >= n1 + BATCH)
    console.log(`batch 2 consumed in ${Date.now() - t0} ms`)
    const ends2 = await endOffsets(admin)
    await waitFor(`${groupA} commits to reach the end offsets`, WAIT_MS, async () => {
      const got = await admin.fetchOffsets({ groupId: groupA, topics: [topic] })
      return got[0].partitions.every(p => Number(p.offset) === ends2.get(p.partition))
    })
    const after = sinkA.recs.slice(n1)
    checkOnce('batch 2, 2 members', after, batch2, owners)
    check(after.every(r => members.some(m => m.name === r.member)), `nothing delivered to ${leaver.name} after it left`)
    checkOnce(`group ${groupA}, both batches`, sinkA.recs, batch1.concat(batch2), null)

    // Group B: pub-sub, sees everything from the start.
    const sinkB = newSink()
    t0 = Date.now()
    const b = await startMember(groupB, 'd1', sinkB, true)
    members.push(b)
    await waitFor(`${groupB} to consume both batches`, WAIT_MS, () => sinkB.recs.length >= 2 * BATCH)
    console.log(`group ${groupB} read ${2 * BATCH} records in ${Date.now() - t0} ms`)
    checkOnce(`group ${groupB}, both batches`, sinkB.recs, batch1.concat(batch2), null)
  } finally {
    for (const m of members) await m.consumer.disconnect().catch(e => console.log(`disconnect ${m.name}: ${e.message}`))
    await producer.disconnect()
    await admin.disconnect()
  }
}

main().then(() => {
  clearTimeout(runTimer)
  if (failures > 0) {
    console.log(`${failures} check(s) failed`)
    process.exit(1)
  }
  console.log('all group checks passed')
  process.exit(0)
}, e => {
  console.error('FAIL: ' + (e && e.stack ? e.stack : e))
  process.exit(1)
})
