// oauth.js checks KafkaJS's SASL/OAUTHBEARER against samsa and exits non-zero on
// any failed check.
//
//   node oauth.js BOOTSTRAP TOPIC GOOD_TOKEN EXPIRED_TOKEN
//
// With GOOD_TOKEN (a JWT the broker accepts) it produces 10 records to TOPIC and
// lists topics. With EXPIRED_TOKEN the broker answers the RFC 7628 challenge
// {"status":"invalid_token"}; KafkaJS 2.2.4 sends one SaslAuthenticate and takes
// any answer without an error code as success, so it never acknowledges the
// challenge: its next request arrives mid-authentication and the broker (samsa,
// as Kafka) closes the connection. The check is that it is not served.
'use strict'

const { Kafka, logLevel } = require('kafkajs')

const [bootstrap, topic, goodToken, expiredToken] = process.argv.slice(2)
if (!expiredToken) {
  console.error('usage: node oauth.js BOOTSTRAP TOPIC GOOD_TOKEN EXPIRED_TOKEN')
  process.exit(2)
}

let failures = 0
function check (ok, what) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`)
  if (!ok) failures++
}

function client (token, retries) {
  return new Kafka({
    clientId: 'samsa-oauth-js',
    brokers: [bootstrap],
    logLevel: logLevel.NOTHING,
    connectionTimeout: 10000,
    requestTimeout: 10000,
    retry: { retries },
    sasl: { mechanism: 'oauthbearer', oauthBearerProvider: async () => ({ value: token }) }
  })
}

async function main () {
  const good = client(goodToken, 2)
  const producer = good.producer()
  await producer.connect()
  const messages = []
  for (let i = 0; i < 10; i++) messages.push({ value: `oauth-js-${i}`, partition: 0 })
  const res = await producer.send({ topic, acks: -1, messages })
  await producer.disconnect()
  check(res.length === 1 && res[0].errorCode === 0, 'OAUTHBEARER with a valid JWT: produce 10 records')
  const admin = good.admin()
  await admin.connect()
  const topics = await admin.listTopics()
  await admin.disconnect()
  check(topics.includes(topic), 'OAUTHBEARER with a valid JWT: list topics')

  const bad = client(expiredToken, 0).admin()
  try {
    await bad.connect()
    await bad.listTopics()
    check(false, 'an expired JWT is not served')
  } catch (e) {
    console.log(`     expired JWT: ${e.name}: ${e.message}`)
    check(true, 'an expired JWT is not served')
  } finally {
    await bad.disconnect().catch(() => {})
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
