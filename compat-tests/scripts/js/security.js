// security.js checks KafkaJS against samsa's secured listeners and exits
// non-zero on any failed check.
//
//   node security.js SASL_SSL_ADDR SSL_ADDR PLAINTEXT_ADDR CA_PEM CLIENT_CERT CLIENT_KEY TOPIC_PREFIX
//
// Over SASL_SSL with SCRAM-SHA-512 (user bob, password bob-secret) and over
// mutual TLS it produces 10 records to PREFIX-scram / PREFIX-mtls and reads
// them back with a consumer group; a wrong password must fail with the
// broker's SASL_AUTHENTICATION_FAILED, and a client without TLS must not
// be served by the SSL listener. The topics exist (the Go test creates them).
'use strict'

const fs = require('fs')
const { Kafka, logLevel } = require('kafkajs')

const [saslAddr, sslAddr, , caFile, certFile, keyFile, prefix] = process.argv.slice(2)
if (!prefix) {
  console.error('usage: node security.js SASL_SSL_ADDR SSL_ADDR PLAINTEXT_ADDR CA_PEM CLIENT_CERT CLIENT_KEY TOPIC_PREFIX')
  process.exit(2)
}
const ca = [fs.readFileSync(caFile, 'utf8')]

let failures = 0
function check (ok, what) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`)
  if (!ok) failures++
}

function client (brokers, extra) {
  return new Kafka({ clientId: 'samsa-security-js', brokers: [brokers], logLevel: logLevel.NOTHING, connectionTimeout: 10000, retry: { retries: 2 }, ...extra })
}

async function roundTrip (kafka, topic) {
  const producer = kafka.producer()
  await producer.connect()
  const want = []
  for (let i = 0; i < 10; i++) want.push(`${topic}-${i}`)
  await producer.send({ topic, acks: -1, messages: want.map(value => ({ value, partition: 0 })) })
  await producer.disconnect()
  const consumer = kafka.consumer({ groupId: `${topic}-group` })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const got = []
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`consumed ${got.length} of 10 records in 60 s`)), 60000)
    consumer.run({
      eachMessage: async ({ message }) => {
        got.push(message.value.toString())
        if (got.length === want.length) {
          clearTimeout(timer)
          resolve()
        }
      }
    }).catch(reject)
  })
  await consumer.disconnect()
  return JSON.stringify(got) === JSON.stringify(want)
}

async function main () {
  const scram = client(saslAddr, { ssl: { ca }, sasl: { mechanism: 'scram-sha-512', username: 'bob', password: 'bob-secret' } })
  check(await roundTrip(scram, `${prefix}-scram`), 'SASL_SSL SCRAM-SHA-512: produce 10 records and consume them back')

  const mtls = client(sslAddr, { ssl: { ca, cert: fs.readFileSync(certFile, 'utf8'), key: fs.readFileSync(keyFile, 'utf8') } })
  check(await roundTrip(mtls, `${prefix}-mtls`), 'mTLS: produce 10 records and consume them back')

  const wrong = client(saslAddr, { ssl: { ca }, sasl: { mechanism: 'scram-sha-512', username: 'bob', password: 'wrong' }, retry: { retries: 0 } })
  const admin = wrong.admin()
  try {
    await admin.connect()
    await admin.listTopics()
    check(false, 'wrong password refused')
  } catch (e) {
    console.log(`     wrong password: ${e.name}: ${e.message}`)
    check(e.name === 'KafkaJSSASLAuthenticationError' && /Authentication failed/.test(e.message), 'wrong password refused with SASL_AUTHENTICATION_FAILED and the broker\'s message')
  } finally {
    await admin.disconnect().catch(() => {})
  }

  const plain = client(sslAddr, { retry: { retries: 0 }, requestTimeout: 10000 })
  const plainAdmin = plain.admin()
  try {
    await plainAdmin.connect()
    await plainAdmin.listTopics()
    check(false, 'a client without TLS is not served by the SSL listener')
  } catch (e) {
    console.log(`     without TLS: ${e.name}: ${e.message}`)
    check(true, 'a client without TLS is not served by the SSL listener')
  } finally {
    await plainAdmin.disconnect().catch(() => {})
  }
}

main().then(() => {
  if (failures > 0) {
    console.log(`${failures} check(s) failed`)
    process.exit(1)
  }
  console.log('all checks passed')
}, err => {
  console.log(`FAIL ${err.stack || err}`)
  process.exit(1)
})
