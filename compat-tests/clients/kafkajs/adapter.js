'use strict'
// kafkajs adapter for the Gregor compat tests:
//   node adapter.js SCENARIO --bootstrap HOST:PORT --topic T --data-dir DIR
// Prints {"ok","observed","error","info"} as the last stdout line; exit 0 pass, 1 fail, 2 usage,
// 3 not applicable (also for a scenario it does not know).
// The scenarios are compat-tests/scenarios.md; the logic mirrors
// compat-tests/clients/_common/compat_common.py (and go/scenarios.go) step by step.

const crypto = require('crypto')
const {
  Kafka,
  logLevel,
  CompressionTypes,
  CompressionCodecs,
  ConfigResourceTypes,
  AssignerProtocol,
} = require('kafkajs')
const KAFKAJS_VERSION = require('kafkajs/package.json').version

const BASE_TS = 1700000000000
const CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd']
// From run.py (README, "The adapter contract"): the topology, the replication factor every topic is
// created with, and the run's time limit in seconds.
const TOPOLOGY = process.env.COMPAT_TOPOLOGY || 'single'
const REPLICATION_FACTOR = Number(process.env.COMPAT_REPLICATION_FACTOR) || 1
const RUN_TIMEOUT_MS = (Number(process.env.COMPAT_TIMEOUT) || 60) * 1000
// leader-failover (scenarios.md): records produced, in rounds of this many, a pause between rounds.
const FAILOVER_RECORDS = 2000
const FAILOVER_ROUND = 50
const FAILOVER_PAUSE_MS = 100

// Optional codecs: kafkajs only ships gzip. Snappy is pure JS; LZ4 needs a
// native build (an optional dependency); no zstd codec installs on Node 20.
const codecProblems = {}
try {
  CompressionCodecs[CompressionTypes.Snappy] = require('kafkajs-snappy')
} catch (e) {
  codecProblems.snappy = `kafkajs-snappy is not installed: ${e.message}`
}
try {
  const LZ4Codec = require('kafkajs-lz4')
  CompressionCodecs[CompressionTypes.LZ4] = new LZ4Codec().codec
} catch (e) {
  codecProblems.lz4 = `kafkajs-lz4 (native lz4 build, optional dependency) is not usable: ${e.message.split('\n')[0]}`
}
codecProblems.zstd =
  'no zstd codec for kafkajs installs on Node 20 without a failing native build (@kafkajs/zstd needs cppzst, whose node-gyp build fails)'

const CODEC_TYPES = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4,
  zstd: CompressionTypes.ZSTD,
}

const CONFIG_SOURCES = {
  0: 'UNKNOWN',
  1: 'DYNAMIC_TOPIC_CONFIG',
  2: 'DYNAMIC_BROKER_CONFIG',
  3: 'DYNAMIC_DEFAULT_BROKER_CONFIG',
  4: 'STATIC_BROKER_CONFIG',
  5: 'DEFAULT_CONFIG',
  6: 'DYNAMIC_BROKER_LOGGER_CONFIG',
  7: 'DYNAMIC_CLIENT_METRICS_CONFIG',
  8: 'DYNAMIC_GROUP_CONFIG',
}
const WAIT = 30000

class NotApplicable extends Error {}
class ScenarioFailed extends Error {}
// An optional capability kafkajs's API lacks: reported as null and not checked.
class Unsupported extends Error {}
class CodeError extends Error {
  constructor(name, msg) {
    super(msg ? `${name}: ${msg}` : name)
    this.codeName = name
  }
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

// kafkajs protocol errors carry .type (the Kafka error name); aggregate errors wrap several.
function kerr(e) {
  if (e && Array.isArray(e.errors) && e.errors.length && e.errors[0].type) return new CodeError(e.errors[0].type, e.message)
  if (e && e.type && e.type !== 'UNKNOWN' && e.name === 'KafkaJSProtocolError') return new CodeError(e.type, e.message)
  if (e && e.cause) return kerr(e.cause)
  return e
}

function nameOf(e) {
  if (e == null) return 'NONE'
  if (e instanceof CodeError) return e.codeName
  return `CLIENT_ERROR(${e.name}: ${e.message})`
}

async function capture(fn) {
  try {
    await fn()
    return null
  } catch (e) {
    if (e instanceof NotApplicable) throw e
    return e
  }
}

// ---------------------------------------------------------------- records

// Record i of scenarios.md ("The records"), for partition i mod partitions.
function genRecord(i, tsStep = 1, partitions = 1) {
  const value = Buffer.alloc(100)
  for (let j = 0; j < 100; j++) value[j] = 0x61 + ((i * 7 + j * 13) % 26)
  return {
    partition: i % partitions,
    offset: -1,
    key: Buffer.from(`k-${i}`),
    value,
    headers: [['h1', Buffer.from(`a-${i}`)], ['h2', Buffer.from(`b-${i}`)]],
    timestamp: BASE_TS + i * tsStep,
    timestampType: null,
  }
}

const genRecords = (first, n, tsStep = 1, partitions = 1) =>
  Array.from({ length: n }, (_, k) => genRecord(first + k, tsStep, partitions))

function indexOf(key) {
  const s = key ? key.toString('latin1') : ''
  if (!/^k-\d+$/.test(s)) return -1
  return Number(s.slice(2))
}

const text = b => (b == null ? Buffer.from('\\N') : Buffer.from(b))

const headerText = hs =>
  Buffer.concat(hs.flatMap(([k, v], n) => [Buffer.from((n ? ',' : '') + k + '='), text(v)]))

const kvhLine = r =>
  Buffer.concat([Buffer.from(`${r.offset}\t`), text(r.key), Buffer.from('\t'), text(r.value), Buffer.from('\t'), headerText(r.headers)])

function digests(recs) {
  const full = crypto.createHash('sha256')
  const kvh = crypto.createHash('sha256')
  for (const r of recs) {
    const common = kvhLine(r)
    full.update(Buffer.concat([common, Buffer.from(`\t${r.timestamp}\n`)]))
    kvh.update(Buffer.concat([common, Buffer.from('\n')]))
  }
  return [full.digest('hex'), kvh.digest('hex')]
}

function fromMessage(partition, m) {
  const headers = []
  for (const [k, v] of Object.entries(m.headers || {})) {
    if (Array.isArray(v)) v.forEach(x => headers.push([k, x == null ? null : Buffer.from(x)]))
    else headers.push([k, v == null ? null : Buffer.from(v)])
  }
  const tt = m.batchContext ? m.batchContext.timestampType : undefined
  return {
    partition,
    offset: Number(m.offset),
    key: m.key,
    value: m.value,
    headers,
    timestamp: Number(m.timestamp),
    timestampType: tt === 0 ? 'CreateTime' : tt === 1 ? 'LogAppendTime' : null,
  }
}

function toMessage(r) {
  const headers = {}
  for (const [k, v] of r.headers) headers[k] = v
  return {
    key: r.key,
    value: r.value,
    headers,
    partition: r.partition,
    timestamp: String(r.timestamp),
  }
}

class Outcome {
  constructor() {
    this.observed = {}
    this.failures = []
  }
  put(k, v) {
    this.observed[k] = v === undefined ? null : v
  }
  expect(what, want, got) {
    if (JSON.stringify(want) !== JSON.stringify(got === undefined ? null : got)) {
      this.failures.push(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`)
    }
  }
  check(ok, msg) {
    if (!ok) this.failures.push(msg)
  }
}

async function pollUntil(fn, timeoutMs = WAIT, intervalMs = 100) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await fn()
    if (v || Date.now() >= deadline) return v
    await sleep(intervalMs)
  }
}

// ---------------------------------------------------------------- security

// The connection's security of the adapter contract (compat-tests/README.md): COMPAT_SECURITY_PROTOCOL,
// COMPAT_SASL_* and COMPAT_SSL_*, as kafkajs's ssl and sasl options. A mechanism kafkajs lacks is not
// applicable, never plaintext.
const SECURITY_PROTOCOL = process.env.COMPAT_SECURITY_PROTOCOL || 'PLAINTEXT'
const KAFKAJS_MECHANISMS = { PLAIN: 'plain', 'SCRAM-SHA-256': 'scram-sha-256', 'SCRAM-SHA-512': 'scram-sha-512' }

function securityOptions() {
  const opts = {}
  if (SECURITY_PROTOCOL === 'PLAINTEXT') return opts
  if (!['SSL', 'SASL_SSL', 'SASL_PLAINTEXT'].includes(SECURITY_PROTOCOL)) {
    throw new NotApplicable(`security protocol ${SECURITY_PROTOCOL}`)
  }
  if (SECURITY_PROTOCOL !== 'SASL_PLAINTEXT') {
    const fs = require('fs')
    opts.ssl = { ca: [fs.readFileSync(process.env.COMPAT_SSL_CA)] }
    if (process.env.COMPAT_SSL_CERT) {
      opts.ssl.cert = fs.readFileSync(process.env.COMPAT_SSL_CERT)
      opts.ssl.key = fs.readFileSync(process.env.COMPAT_SSL_KEY)
    }
  }
  if (SECURITY_PROTOCOL.startsWith('SASL_')) {
    const mechanism = KAFKAJS_MECHANISMS[process.env.COMPAT_SASL_MECHANISM]
    if (!mechanism) throw new NotApplicable(`kafkajs has no SASL mechanism ${process.env.COMPAT_SASL_MECHANISM}`)
    opts.sasl = { mechanism, username: process.env.COMPAT_SASL_USERNAME, password: process.env.COMPAT_SASL_PASSWORD }
  }
  return opts
}

// ---------------------------------------------------------------- adapter

class KafkajsAdapter {
  constructor(bootstrap) {
    this.kafka = new Kafka({
      ...securityOptions(),
      clientId: 'gregor-compat-kafkajs',
      brokers: bootstrap.split(','),
      logLevel: logLevel.NOTHING,
      retry: { initialRetryTime: 100, retries: 8, maxRetryTime: 1000 },
    })
    this.admin = this.kafka.admin({ retry: { initialRetryTime: 100, retries: 3, maxRetryTime: 500 } })
    this.closers = []
  }

  notApplicable(scenario) {
    const codec = scenario.startsWith('produce-consume-') ? scenario.slice('produce-consume-'.length) : null
    return (codec && codecProblems[codec]) || null
  }

  async connect() {
    await this.admin.connect()
  }

  async close() {
    for (const c of this.closers.reverse()) {
      try {
        await c()
      } catch (e) {
        // ignore
      }
    }
    await this.admin.disconnect()
  }

  async createTopic(topic, partitions) {
    let created
    try {
      created = await this.admin.createTopics({
        topics: [{ topic, numPartitions: partitions, replicationFactor: REPLICATION_FACTOR }],
        waitForLeaders: false,
      })
    } catch (e) {
      throw kerr(e)
    }
    // kafkajs documents createTopics as resolving false when the topic already exists
    // (it swallows exactly the TOPIC_ALREADY_EXISTS error code).
    if (created === false) throw new CodeError('TOPIC_ALREADY_EXISTS', 'createTopics resolved false')
  }

  async deleteTopic(topic) {
    try {
      await this.admin.deleteTopics({ topics: [topic] })
    } catch (e) {
      throw kerr(e)
    }
  }

  async listTopics() {
    return await this.admin.listTopics()
  }

  async topicPartitions(topic) {
    try {
      const md = await this.admin.fetchTopicMetadata({ topics: [topic] })
      const t = md.topics.find(x => x.name === topic)
      if (!t) throw new ScenarioFailed(`topic ${topic} missing from metadata`)
      return t.partitions.length
    } catch (e) {
      throw kerr(e)
    }
  }

  async produce(topic, recs, codec, idempotent) {
    if (codecProblems[codec]) throw new NotApplicable(codecProblems[codec])
    // kafkajs has no batch.size: one send() makes one batch per partition.
    const opts = idempotent ? { idempotent: true, maxInFlightRequests: 5, allowAutoTopicCreation: false } : { allowAutoTopicCreation: false }
    const p = this.kafka.producer(opts)
    await p.connect()
    try {
      await p.send({ topic, acks: -1, compression: CODEC_TYPES[codec], messages: recs.map(toMessage) })
    } catch (e) {
      throw kerr(e)
    } finally {
      await p.disconnect()
    }
  }

  // kafkajs has no assign(): a reader is a throwaway group subscribed from the beginning.
  async openReader(topic, partition, readCommitted) {
    const c = this.kafka.consumer({
      groupId: `${topic}-reader-${process.pid}-${Date.now()}`,
      readUncommitted: !readCommitted,
      maxWaitTimeInMs: 500,
      allowAutoTopicCreation: false,
    })
    const queue = []
    await c.connect()
    await c.subscribe({ topics: [topic], fromBeginning: true })
    await c.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        if (batch.partition !== partition) return
        for (const m of batch.messages) queue.push(fromMessage(batch.partition, m))
      },
    })
    return {
      poll: async seconds => {
        if (!queue.length) await sleep(seconds * 1000)
        return queue.splice(0)
      },
      close: async () => c.disconnect(),
    }
  }

  // kafkajs's admin lists offsets under read_uncommitted only and has no max-timestamp query.
  async listOffset(topic, partition, ts, readCommitted) {
    if (ts === -3) throw new Unsupported('kafkajs has no max-timestamp offset query')
    if (ts === -1 && readCommitted) throw new Unsupported('kafkajs lists offsets under read_uncommitted only')
    try {
      const ends = await this.admin.fetchTopicOffsets(topic)
      const p = ends.find(x => x.partition === partition)
      if (ts === -2) return Number(p.low)
      if (ts === -1) return Number(p.high)
      const byTs = await this.admin.fetchTopicOffsetsByTimestamp(topic, ts)
      const off = Number(byTs.find(x => x.partition === partition).offset)
      // kafkajs replaces the broker's "no such offset" (-1) by the high watermark; map it back.
      return off === Number(p.high) ? -1 : off
    } catch (e) {
      throw kerr(e)
    }
  }

  async describeTopicConfig(topic, name) {
    let res
    try {
      res = await this.admin.describeConfigs({
        includeSynonyms: false,
        resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: [name] }],
      })
    } catch (e) {
      throw kerr(e)
    }
    for (const r of res.resources) {
      const e = r.configEntries.find(x => x.configName === name)
      if (e) return [e.configValue, e.configSource === undefined ? null : CONFIG_SOURCES[e.configSource] || 'UNKNOWN']
    }
    throw new ScenarioFailed(`config ${name} not described`)
  }

  // kafkajs only has the (non-incremental) AlterConfigs API.
  async alterTopicConfig(topic, name, value) {
    try {
      await this.admin.alterConfigs({
        validateOnly: false,
        resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: [{ name, value }] }],
      })
    } catch (e) {
      throw kerr(e)
    }
  }

  // deleteTopicRecords does not return the new low watermark: null (not checked).
  async deleteRecords(topic, partition, before) {
    try {
      await this.admin.deleteTopicRecords({ topic, partitions: [{ partition, offset: String(before) }] })
    } catch (e) {
      throw kerr(e)
    }
    return null
  }

  async transactions(topic, txnId, committed, aborted) {
    const p = this.kafka.producer({
      transactionalId: txnId,
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
    })
    await p.connect()
    try {
      for (const [recs, commit] of [
        [committed, true],
        [aborted, false],
      ]) {
        const txn = await p.transaction()
        await txn.send({ topic, acks: -1, messages: recs.map(toMessage) })
        if (commit) await txn.commit()
        else await txn.abort()
      }
    } catch (e) {
      throw kerr(e)
    } finally {
      await p.disconnect()
    }
  }

  async describeGroup(group, topic) {
    const res = await this.admin.describeGroups([group])
    const g = res.groups.find(x => x.groupId === group)
    if (!g) throw new ScenarioFailed('group missing from DescribeGroups')
    const sizes = g.members.map(m => {
      const a = m.memberAssignment && m.memberAssignment.length ? AssignerProtocol.MemberAssignment.decode(m.memberAssignment) : null
      return a && a.assignment[topic] ? a.assignment[topic].length : 0
    })
    return [g.state, sizes]
  }

  async committedOffsets(group, topic, partitions) {
    const res = await this.admin.fetchOffsets({ groupId: group, topics: [topic] })
    const out = Array(partitions).fill(-1)
    for (const t of res) {
      if (t.topic !== topic) continue
      for (const p of t.partitions) {
        const off = Number(p.offset)
        if (p.partition >= 0 && p.partition < partitions && off >= 0) out[p.partition] = off
      }
    }
    return out
  }

  async newGroupConsumer(group, topic) {
    const c = this.kafka.consumer({
      groupId: group,
      heartbeatInterval: 1000, // members notice rebalances sooner
      maxWaitTimeInMs: 500,
      allowAutoTopicCreation: false,
    })
    const state = { assigned: 0, queue: [], next: new Map(), closed: false }
    c.on(c.events.GROUP_JOIN, e => {
      const a = e.payload.memberAssignment[topic] || []
      state.assigned = a.length
    })
    c.on(c.events.REBALANCING, () => {
      state.assigned = 0
    })
    await c.connect()
    await c.subscribe({ topics: [topic], fromBeginning: true })
    await c.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        for (const m of batch.messages) state.queue.push(fromMessage(batch.partition, m))
      },
    })
    const gc = {
      assigned: () => state.assigned,
      poll: async seconds => {
        if (!state.queue.length) await sleep(seconds * 1000)
        const out = state.queue.splice(0)
        for (const r of out) state.next.set(r.partition, r.offset + 1)
        return out
      },
      commit: async () => {
        const offsets = [...state.next.entries()].map(([partition, offset]) => ({
          topic,
          partition,
          offset: String(offset),
        }))
        if (offsets.length) await c.commitOffsets(offsets)
      },
      close: async () => {
        if (!state.closed) {
          state.closed = true
          await c.disconnect()
        }
      },
    }
    this.closers.push(gc.close)
    return gc
  }
}

// ---------------------------------------------------------------- scenarios

async function createTopic(a, topic, partitions) {
  await a.createTopic(topic, partitions)
  const st = {}
  const ok = await pollUntil(async () => {
    try {
      st.n = await a.topicPartitions(topic)
      return st.n === partitions
    } catch (e) {
      st.err = e
      return false
    }
  })
  if (!ok) throw new ScenarioFailed(`topic ${topic}: ${st.n} partitions described, last error ${st.err}`)
}

// Reads partition from its earliest offset up to its end offset (the LSO under read_committed,
// where kafkajs can list it). Offsets past the last record that never arrive (control markers)
// end the read after 2 s without records.
async function readToEnd(a, topic, partition, readCommitted) {
  let end
  try {
    end = await a.listOffset(topic, partition, -1, readCommitted)
  } catch (e) {
    if (!(e instanceof Unsupported)) throw e
    end = await a.listOffset(topic, partition, -1, false)
  }
  const start = await a.listOffset(topic, partition, -2, false)
  const out = []
  if (start >= end) return out
  const r = await a.openReader(topic, partition, readCommitted)
  try {
    const deadline = Date.now() + WAIT
    let lastProgress = Date.now()
    for (;;) {
      const recs = await r.poll(0.2)
      if (recs.length) {
        out.push(...recs)
        lastProgress = Date.now()
      }
      if (out.length && out[out.length - 1].offset + 1 >= end) return out
      if (out.length && Date.now() - lastProgress > 2000) return out
      if (Date.now() > deadline) {
        throw new ScenarioFailed(`reading ${topic}[${partition}] stalled after ${out.length} records (end offset ${end})`)
      }
    }
  } finally {
    await r.close()
  }
}

function verifyAndDigest(o, recs, want, tsStep) {
  let bad = 0
  let firstBad = null
  recs.forEach((r, n) => {
    const g = genRecord(n, tsStep)
    let why = null
    if (r.offset !== n) why = `offset ${r.offset} at position ${n}`
    else if (!Buffer.from(r.key || '').equals(g.key)) why = `key at offset ${n}`
    else if (!Buffer.from(r.value || '').equals(g.value)) why = `value at offset ${n}`
    else if (!headerText(r.headers).equals(headerText(g.headers))) why = `headers at offset ${n}: ${headerText(r.headers)}`
    else if (r.timestamp !== g.timestamp) why = `timestamp at offset ${n}: ${r.timestamp}`
    else if (r.timestampType !== null && r.timestampType !== 'CreateTime') why = `timestamp type ${r.timestampType} at offset ${n}`
    if (why) {
      bad++
      firstBad = firstBad || why
    }
  })
  const [full, kvh] = digests(recs)
  o.put('count', recs.length)
  o.put('first_offset', recs.length ? recs[0].offset : null)
  o.put('last_offset', recs.length ? recs[recs.length - 1].offset : null)
  o.put('sha256', full)
  o.put('sha256_kvh', kvh)
  o.expect('count', want, recs.length)
  o.check(bad === 0, `${bad} records differ from what was produced (first: ${firstBad})`)
}

function timestampType(recs) {
  for (const r of recs) {
    if (r.timestampType === null) return null
    if (r.timestampType !== 'CreateTime') return r.timestampType
  }
  return 'CreateTime'
}

async function scAdminTopics(a, topic, o) {
  const e = await capture(() => a.createTopic(topic, 3))
  o.put('create', nameOf(e))
  if (e) throw new ScenarioFailed(`create: ${nameOf(e)}`)
  let listed = false
  let partitions = -1
  await pollUntil(async () => {
    try {
      listed = (await a.listTopics()).includes(topic)
    } catch (err) {
      listed = false
    }
    try {
      partitions = await a.topicPartitions(topic)
    } catch (err) {
      partitions = -1
    }
    return listed && partitions === 3
  })
  o.put('listed', listed)
  o.put('partitions', partitions)
  o.expect('listed', true, listed)
  o.expect('partitions', 3, partitions)
  o.put('create_again_error', nameOf(await capture(() => a.createTopic(topic, 3))))
  o.put('create_invalid_error', nameOf(await capture(() => a.createTopic('bad/name', 1))))
  o.put('delete', nameOf(await capture(() => a.deleteTopic(topic))))
  let last = null
  await pollUntil(async () => {
    last = await capture(() => a.topicPartitions(topic))
    return last instanceof CodeError
  })
  o.put('describe_after_delete_error', nameOf(last))
  o.expect('create_again_error', 'TOPIC_ALREADY_EXISTS', o.observed.create_again_error)
  o.expect('create_invalid_error', 'INVALID_TOPIC_EXCEPTION', o.observed.create_invalid_error)
  o.expect('delete', 'NONE', o.observed.delete)
  o.expect('describe_after_delete_error', 'UNKNOWN_TOPIC_OR_PARTITION', o.observed.describe_after_delete_error)
}

async function produceConsume(a, topic, o, codec, idempotent = false) {
  await createTopic(a, topic, 1)
  await a.produce(topic, genRecords(0, 1000), codec, idempotent)
  const recs = await readToEnd(a, topic, 0, false)
  verifyAndDigest(o, recs, 1000, 1)
  if (!idempotent) {
    const tt = timestampType(recs)
    o.put('timestamp_type', tt)
    if (tt !== null) o.expect('timestamp_type', 'CreateTime', tt)
    const end = await a.listOffset(topic, 0, -1, false)
    o.put('end_offset', end)
    o.expect('end_offset', 1000, end)
  }
  o.expect('first_offset', 0, o.observed.first_offset)
  o.expect('last_offset', 999, o.observed.last_offset)
}

// leader-failover: idempotent acks=all rounds while run.py kills the partition's leader, then every
// record read back exactly once and in order (verifyAndDigest wants record i at offset i).
async function scLeaderFailover(a, topic, o) {
  if (TOPOLOGY !== 'cluster') throw new NotApplicable('leader-failover needs a cluster (run.py --topology cluster)')
  await createTopic(a, topic, 1)
  // One producer for every round: it must ride the failover itself.
  const p = a.kafka.producer({
    idempotent: true,
    maxInFlightRequests: 5,
    allowAutoTopicCreation: false,
    retry: { initialRetryTime: 300, retries: 40, maxRetryTime: 1000 },
  })
  await p.connect()
  try {
    for (let first = 0; first < FAILOVER_RECORDS; first += FAILOVER_ROUND) {
      await p.send({ topic, acks: -1, messages: genRecords(first, FAILOVER_ROUND).map(toMessage) })
      await sleep(FAILOVER_PAUSE_MS)
    }
  } catch (e) {
    throw kerr(e)
  } finally {
    await p.disconnect()
  }
  const recs = await readToEnd(a, topic, 0, false)
  verifyAndDigest(o, recs, FAILOVER_RECORDS, 1)
}

async function scOffsetsByTimestamp(a, topic, o) {
  await createTopic(a, topic, 1)
  await a.produce(topic, genRecords(0, 100, 10), 'none', false)
  for (const [name, ts, want] of [
    ['earliest', -2, 0],
    ['latest', -1, 100],
    ['by_timestamp', BASE_TS + 505, 51],
    ['max_timestamp', -3, 99],
    ['past_end', BASE_TS + 10000, -1],
  ]) {
    try {
      const off = await a.listOffset(topic, 0, ts, false)
      o.put(name, off)
      o.expect(name, want, off)
    } catch (e) {
      if (!(e instanceof Unsupported)) throw e
      o.put(name, null)
    }
  }
}

async function scConfigs(a, topic, o) {
  await createTopic(a, topic, 1)
  const [v, src] = await a.describeTopicConfig(topic, 'retention.ms')
  o.put('before', v)
  o.put('before_source', src)
  await a.alterTopicConfig(topic, 'retention.ms', '3600000')
  let after = [null, null]
  await pollUntil(async () => {
    after = await a.describeTopicConfig(topic, 'retention.ms')
    return after[0] === '3600000'
  }, 10000)
  o.put('after', after[0])
  o.put('after_source', after[1])
  o.expect('before', '604800000', o.observed.before)
  o.expect('before_source', 'DEFAULT_CONFIG', o.observed.before_source)
  o.expect('after', '3600000', o.observed.after)
  o.expect('after_source', 'DYNAMIC_TOPIC_CONFIG', o.observed.after_source)
}

async function scTransactions(a, topic, o) {
  await createTopic(a, topic, 1)
  await a.transactions(topic, `${topic}-tx`, genRecords(0, 100), genRecords(100, 100))
  const rc = await readToEnd(a, topic, 0, true)
  const ru = await readToEnd(a, topic, 0, false)
  const ok = rc.filter(r => indexOf(r.key) >= 0 && indexOf(r.key) < 100).length
  const end = await a.listOffset(topic, 0, -1, false)
  let lso = null
  try {
    lso = await a.listOffset(topic, 0, -1, true)
  } catch (e) {
    if (!(e instanceof Unsupported)) throw e
  }
  o.put('committed_seen', rc.length)
  o.put('aborted_seen', rc.length - ok)
  o.put('read_uncommitted_seen', ru.length)
  o.put('end_offset', end)
  o.put('last_stable_offset', lso)
  o.expect('committed_seen', 100, rc.length)
  o.expect('committed records are records 0..99', 100, ok)
  o.expect('aborted_seen', 0, rc.length - ok)
  o.expect('read_uncommitted_seen', 200, ru.length)
  o.expect('end_offset', 202, end)
  if (lso !== null) o.expect('last_stable_offset', 202, lso)
}

async function scDeleteRecords(a, topic, o) {
  await createTopic(a, topic, 1)
  await a.produce(topic, genRecords(0, 100), 'none', false)
  const low = await a.deleteRecords(topic, 0, 40)
  o.put('low_watermark', low)
  if (low !== null) o.expect('low_watermark', 40, low)
  for (const [name, ts, want] of [
    ['earliest', -2, 40],
    ['latest', -1, 100],
  ]) {
    const off = await a.listOffset(topic, 0, ts, false)
    o.put(name, off)
    o.expect(name, want, off)
  }
  const recs = await readToEnd(a, topic, 0, false)
  o.put('first_consumed', recs.length ? recs[0].offset : null)
  o.put('consumed', recs.length)
  o.expect('first_consumed', 40, o.observed.first_consumed)
  o.expect('consumed', 60, recs.length)
}

async function scConsumerGroup(a, topic, o) {
  const partitions = 6
  const group = `${topic}-g`
  await createTopic(a, topic, partitions)
  const cs = []
  const seen = new Set()
  const per = [0, 0, 0]
  try {
    for (let i = 0; i < 3; i++) cs.push(await a.newGroupConsumer(group, topic))
    const pollAll = async seconds => {
      for (let n = 0; n < cs.length; n++) {
        const recs = await cs[n].poll(seconds)
        for (const r of recs) {
          seen.add(indexOf(r.key))
          per[n]++
        }
        if (recs.length) {
          try {
            await cs[n].commit()
          } catch (e) {
            // a rebalance got in the way; the next owner re-reads from the last commit
          }
        }
      }
    }
    const until = async cond => {
      const deadline = Date.now() + WAIT
      while (Date.now() < deadline) {
        await pollAll(0.05)
        if (await cond()) return true
      }
      return false
    }
    let last = null
    const stable = await until(async () => {
      try {
        const [st, sizes] = await a.describeGroup(group, topic)
        last = `${st} ${JSON.stringify(sizes)}`
        return st === 'Stable' && sizes.length === 3 && sizes.every(x => x === 2)
      } catch (e) {
        last = String(e)
        return false
      }
    })
    o.put('members_stable', stable ? 3 : 0)
    o.check(stable, `the group never became Stable with 3 members of 2 partitions each (last: ${last})`)
    await a.produce(topic, genRecords(0, 600, 1, partitions), 'none', false)
    const all = await until(async () => seen.size >= 600)
    o.check(all, `the members consumed only ${seen.size} of 600 records`)
    await until(async () => {
      try {
        const c = await a.committedOffsets(group, topic, partitions)
        return c.reduce((x, y) => x + Math.max(0, y), 0) >= 600
      } catch (e) {
        return false
      }
    })
    for (const c of cs) {
      try {
        await c.commit()
      } catch (e) {
        // ignore
      }
    }
  } finally {
    for (const c of cs) await c.close()
  }
  const sorted = per.slice().sort((x, y) => x - y)
  o.put('distinct_consumed', seen.size)
  o.put('per_consumer', sorted)
  const committed = await a.committedOffsets(group, topic, partitions)
  o.put('committed', committed)
  o.expect('distinct_consumed', 600, seen.size)
  o.expect('per_consumer', [200, 200, 200], sorted)
  o.expect('committed', [100, 100, 100, 100, 100, 100], committed)

  // phase 2: a new member resumes from the commits: nothing old, then exactly the 10 new records
  const counts = { old: 0, new: 0 }
  const count = recs => recs.forEach(r => (indexOf(r.key) >= 600 ? counts.new++ : counts.old++))
  const r = await a.newGroupConsumer(group, topic)
  try {
    let deadline = Date.now() + WAIT
    while (r.assigned() < partitions && Date.now() < deadline) count(await r.poll(0.1))
    o.check(r.assigned() === partitions, `the new member got ${r.assigned()} partitions`)
    const quiet = Date.now() + 2000
    while (Date.now() < quiet) count(await r.poll(0.1))
    await a.produce(topic, genRecords(600, 10, 1, partitions), 'none', false)
    deadline = Date.now() + WAIT
    while (counts.new < 10 && Date.now() < deadline) count(await r.poll(0.1))
    await r.commit()
  } finally {
    await r.close()
  }
  o.put('resumed_old', counts.old)
  o.put('new_seen', counts.new)
  const after = await a.committedOffsets(group, topic, partitions)
  o.put('committed_after', after)
  o.expect('resumed_old', 0, counts.old)
  o.expect('new_seen', 10, counts.new)
  o.expect('committed_after', [102, 102, 102, 102, 101, 101], after)
}

const SCENARIOS = {
  'admin-topics': scAdminTopics,
  'offsets-by-timestamp': scOffsetsByTimestamp,
  'consumer-group': scConsumerGroup,
  'idempotent-producer': (a, t, o) => produceConsume(a, t, o, 'none', true),
  transactions: scTransactions,
  configs: scConfigs,
  'delete-records': scDeleteRecords,
  'leader-failover': scLeaderFailover,
}
for (const c of CODECS) SCENARIOS[`produce-consume-${c}`] = (a, t, o) => produceConsume(a, t, o, c)

// ---------------------------------------------------------------- main

const INFO = { client: 'kafkajs', library: `kafkajs ${KAFKAJS_VERSION}` }

function sortKeys(v) {
  if (Array.isArray(v)) return v.map(sortKeys)
  if (v && typeof v === 'object') {
    const out = {}
    for (const k of Object.keys(v).sort()) out[k] = sortKeys(v[k])
    return out
  }
  return v
}

function emit(ok, observed, error, code) {
  const line = JSON.stringify({ ok, observed: sortKeys(observed), error, info: INFO })
  process.stdout.write(line + '\n', () => process.exit(code))
}

function parseArgs(argv) {
  const args = { scenario: argv[0] }
  for (let i = 1; i < argv.length; i++) {
    const m = /^--(bootstrap|topic|data-dir)(?:=(.*))?$/.exec(argv[i])
    if (!m) return null
    args[m[1]] = m[2] !== undefined ? m[2] : argv[++i]
  }
  return args.scenario && args.bootstrap && args.topic ? args : null
}

async function main() {
  const args = parseArgs(process.argv.slice(2))
  if (!args) return emit(false, {}, 'usage: run SCENARIO --bootstrap HOST:PORT --topic T --data-dir DIR', 2)
  const sc = SCENARIOS[args.scenario]
  if (!sc) return emit(false, {}, `not applicable: scenario '${args.scenario}' is not implemented by the kafkajs adapter`, 3)
  const o = new Outcome()
  setTimeout(() => emit(false, o.observed, `scenario timed out (${(RUN_TIMEOUT_MS - 3000) / 1000} s)`, 1), RUN_TIMEOUT_MS - 3000).unref()
  let a
  try {
    a = new KafkajsAdapter(args.bootstrap)
  } catch (e) {
    if (e instanceof NotApplicable) return emit(false, {}, `not applicable: ${e.message}`, 3)
    return emit(false, {}, `client setup: ${e && e.message}`, 1)
  }
  const reason = a.notApplicable(args.scenario)
  if (reason) return emit(false, {}, `not applicable: ${reason}`, 3)
  const start = Date.now()
  let result
  try {
    await a.connect()
    await sc(a, args.topic, o)
    INFO.seconds = (Date.now() - start) / 1000
    result = o.failures.length ? [false, o.observed, o.failures.join('; '), 1] : [true, o.observed, '', 0]
  } catch (e) {
    if (e instanceof NotApplicable) result = [false, o.observed, `not applicable: ${e.message}`, 3]
    else if (e instanceof ScenarioFailed) result = [false, o.observed, [e.message, ...o.failures].join('; '), 1]
    else {
      process.stderr.write(`${e && e.stack}\n`)
      result = [false, o.observed, [`${e && e.name}: ${e && e.message}`, ...o.failures].join('; '), 1]
    }
  }
  try {
    await Promise.race([a.close(), sleep(5000)])
  } catch (e) {
    // ignore
  }
  emit(...result)
}

main()
