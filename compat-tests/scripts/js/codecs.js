// codecs.js registers the compression codecs KafkaJS does not ship with.
//
// KafkaJS 2.x has only gzip built in; every other codec is a plug-in object
// { compress(encoder) -> Promise<Buffer>, decompress(buffer) -> Promise<Buffer> }.
//   snappy: kafkajs-snappy (pure JS, through snappyjs).
//   lz4:    a small wrapper over lz4js (pure JS). Kafka's LZ4 is the LZ4 frame
//           format, which is what lz4js.compress writes.
//   zstd:   a small wrapper over zstd-codec (emscripten build of zstd, no native
//           build step). The published KafkaJS zstd codecs need node-gyp builds.
'use strict'

const { CompressionTypes, CompressionCodecs } = require('kafkajs')
const SnappyCodec = require('kafkajs-snappy')
const lz4 = require('lz4js')
const { ZstdCodec } = require('zstd-codec')

function lz4Codec () {
  return {
    async compress (encoder) {
      return Buffer.from(lz4.compress(encoder.buffer))
    },
    async decompress (buffer) {
      return Buffer.from(lz4.decompress(buffer))
    }
  }
}

// loadZstd resolves to the zstd-codec module once its wasm is initialised.
function loadZstd () {
  return new Promise(resolve => ZstdCodec.run(resolve))
}

// register installs snappy, lz4 and zstd into KafkaJS's codec table.
async function register () {
  const zstd = await loadZstd()
  const simple = new zstd.Simple()
  const streaming = new zstd.Streaming()
  CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec
  CompressionCodecs[CompressionTypes.LZ4] = lz4Codec
  CompressionCodecs[CompressionTypes.ZSTD] = () => ({
    async compress (encoder) {
      return Buffer.from(simple.compress(encoder.buffer, 3))
    },
    async decompress (buffer) {
      // Streaming also handles frames that do not record their content size,
      // which other producers (librdkafka, franz-go) write.
      return Buffer.from(streaming.decompress(buffer))
    }
  })
}

module.exports = { register }
