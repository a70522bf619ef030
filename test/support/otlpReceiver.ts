/**
 * A stand-in OpenTelemetry collector for tests: OTLP/HTTP on 127.0.0.1 (`/v1/traces`, `/v1/metrics`,
 * `/v1/logs`). JSON bodies are decoded into spans, metric names and log records; protobuf bodies (a client that
 * ignores `OTEL_EXPORTER_OTLP_PROTOCOL`) are kept raw and counted, so a test can still tell that something came.
 */
import * as http from "node:http"
import * as zlib from "node:zlib"
import { freePort } from "./ports.js"

export type AttributeValue = string | number | boolean | null | ReadonlyArray<unknown>

export interface ReceivedSpan {
  readonly name: string
  readonly traceId: string
  readonly spanId: string
  /** Empty for a root span. */
  readonly parentSpanId: string
  readonly attributes: Readonly<Record<string, AttributeValue>>
  /** The resource's attributes (service.name, flotta.agent for a child, ...). */
  readonly resource: Readonly<Record<string, AttributeValue>>
  readonly links: ReadonlyArray<{ readonly traceId: string; readonly spanId: string }>
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  readonly status: number
}

export interface ReceivedMetric {
  readonly name: string
  readonly resource: Readonly<Record<string, AttributeValue>>
  /** Each data point's attributes and value (sum/gauge: `asDouble`/`asInt`; histogram: its count). */
  readonly points: ReadonlyArray<
    { readonly attributes: Readonly<Record<string, AttributeValue>>; readonly value: number }
  >
}

export interface ReceivedRequest {
  readonly path: string
  readonly contentType: string
  readonly body: Buffer
}

export interface OtlpReceiver {
  /** The base URL, as `telemetry.otlp` takes it: `http://127.0.0.1:PORT`. */
  readonly url: string
  readonly requests: ReadonlyArray<ReceivedRequest>
  readonly spans: ReadonlyArray<ReceivedSpan>
  readonly metrics: ReadonlyArray<ReceivedMetric>
  readonly logs: ReadonlyArray<{ readonly body: unknown; readonly resource: Readonly<Record<string, AttributeValue>> }>
  /** Requests whose body was protobuf (kept raw, not decoded), by path. */
  readonly protobuf: Readonly<Record<string, number>>
  readonly close: () => Promise<void>
}

type AnyValue = {
  readonly stringValue?: string
  readonly intValue?: string | number
  readonly doubleValue?: number
  readonly boolValue?: boolean
  readonly arrayValue?: { readonly values?: ReadonlyArray<AnyValue> }
}
type KeyValue = { readonly key: string; readonly value?: AnyValue }

const valueOf = (value: AnyValue | undefined): AttributeValue => {
  if (value === undefined) return null
  if (value.stringValue !== undefined) return value.stringValue
  if (value.intValue !== undefined) return Number(value.intValue)
  if (value.doubleValue !== undefined) return value.doubleValue
  if (value.boolValue !== undefined) return value.boolValue
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(valueOf)
  return null
}

const attributesOf = (list: ReadonlyArray<KeyValue> | undefined) =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, valueOf(kv.value)]))

/** OTLP/JSON ids are hex; a client that sends base64 (the protobuf JSON mapping) is read as such. */
const hexId = (id: unknown): string => {
  if (typeof id !== "string" || id.length === 0) return ""
  return /^[0-9a-f]+$/i.test(id) ? id.toLowerCase() : Buffer.from(id, "base64").toString("hex")
}

const obj = (value: unknown): Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : {}
const arr = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])
const kvs = (value: unknown) => arr(value) as ReadonlyArray<KeyValue>

const decodeSpans = (json: unknown): Array<ReceivedSpan> =>
  arr(obj(json)["resourceSpans"]).flatMap((rs) => {
    const resource = attributesOf(kvs(obj(obj(rs)["resource"])["attributes"]))
    return arr(obj(rs)["scopeSpans"]).flatMap((ss) =>
      arr(obj(ss)["spans"]).map((value): ReceivedSpan => {
        const span = obj(value)
        return {
          name: String(span["name"]),
          traceId: hexId(span["traceId"]),
          spanId: hexId(span["spanId"]),
          parentSpanId: hexId(span["parentSpanId"]),
          attributes: attributesOf(kvs(span["attributes"])),
          resource,
          links: arr(span["links"]).map((l) => ({
            traceId: hexId(obj(l)["traceId"]),
            spanId: hexId(obj(l)["spanId"])
          })),
          status: Number(obj(span["status"])["code"] ?? 0)
        }
      })
    )
  })

const pointValue = (point: Record<string, unknown>): number =>
  point["asDouble"] !== undefined
    ? Number(point["asDouble"])
    : point["asInt"] !== undefined
    ? Number(point["asInt"])
    : Number(point["count"] ?? 0)

const decodeMetrics = (json: unknown): Array<ReceivedMetric> =>
  arr(obj(json)["resourceMetrics"]).flatMap((rm) => {
    const resource = attributesOf(kvs(obj(obj(rm)["resource"])["attributes"]))
    return arr(obj(rm)["scopeMetrics"]).flatMap((sm) =>
      arr(obj(sm)["metrics"]).map((value): ReceivedMetric => {
        const metric = obj(value)
        const data = obj(metric["sum"] ?? metric["gauge"] ?? metric["histogram"] ?? metric["exponentialHistogram"])
        return {
          name: String(metric["name"]),
          resource,
          points: arr(data["dataPoints"]).map((p) => ({
            attributes: attributesOf(kvs(obj(p)["attributes"])),
            value: pointValue(obj(p))
          }))
        }
      })
    )
  })

const decodeLogs = (json: unknown) =>
  arr(obj(json)["resourceLogs"]).flatMap((rl) => {
    const resource = attributesOf(kvs(obj(obj(rl)["resource"])["attributes"]))
    return arr(obj(rl)["scopeLogs"]).flatMap((sl) =>
      arr(obj(sl)["logRecords"]).map((record) => ({ body: valueOf(obj(record)["body"] as AnyValue), resource }))
    )
  })

const readBody = (req: http.IncomingMessage) =>
  new Promise<Buffer>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("error", reject)
    req.on("end", () => {
      const raw = Buffer.concat(chunks)
      const encoding = req.headers["content-encoding"]
      try {
        resolve(encoding === "gzip" ? zlib.gunzipSync(raw) : encoding === "deflate" ? zlib.inflateSync(raw) : raw)
      } catch (e) {
        reject(e)
      }
    })
  })

/** Starts a receiver on a free port of 127.0.0.1. */
export const startOtlpReceiver = async (): Promise<OtlpReceiver> => {
  const requests: Array<ReceivedRequest> = []
  const spans: Array<ReceivedSpan> = []
  const metrics: Array<ReceivedMetric> = []
  const logs: Array<{ body: unknown; resource: Record<string, AttributeValue> }> = []
  const protobuf: Record<string, number> = {}
  const server = http.createServer((req, res) => {
    readBody(req).then((body) => {
      const path = (req.url ?? "/").split("?")[0]!
      const contentType = String(req.headers["content-type"] ?? "")
      requests.push({ path, contentType, body })
      if (req.method !== "POST" || !["/v1/traces", "/v1/metrics", "/v1/logs"].includes(path)) {
        res.writeHead(404).end()
        return
      }
      if (contentType.includes("protobuf")) {
        protobuf[path] = (protobuf[path] ?? 0) + 1
        res.writeHead(200, { "content-type": "application/x-protobuf" }).end()
        return
      }
      const json: unknown = JSON.parse(body.toString("utf8"))
      if (path === "/v1/traces") spans.push(...decodeSpans(json))
      else if (path === "/v1/metrics") metrics.push(...decodeMetrics(json))
      else logs.push(...decodeLogs(json))
      res.writeHead(200, { "content-type": "application/json" }).end("{}")
    }).catch((e: unknown) => {
      res.writeHead(400, { "content-type": "text/plain" }).end(String(e))
    })
  })
  const port = await freePort()
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(port, "127.0.0.1", () => resolve())
  })
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    spans,
    metrics,
    logs,
    protobuf,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

/** The spans of one name. */
export const spansNamed = (receiver: OtlpReceiver, name: string) => receiver.spans.filter((s) => s.name === name)
