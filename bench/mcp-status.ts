/**
 * MCP tool-call latency: `tools/call flotta_status` on the flotta MCP server over loopback HTTP, against the
 * same SDK (`createMcpHandler` from @modelcontextprotocol/server, served with `toNodeHandler`) answering a
 * no-op tool, in the same process and the same run, in both protocol eras. Then a load run: 50 concurrent
 * clients making 100 calls each, which must all succeed.
 *   npx tsx bench/mcp-status.ts        (BENCH_CALLS=2000 sequential calls per server and era by default)
 */
import { NodeContext } from "@effect/platform-node"
import { Flotta } from "@flotta/core/Flotta"
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { toNodeHandler } from "@modelcontextprotocol/node"
import { createMcpHandler, McpServer as SdkServer } from "@modelcontextprotocol/server"
import { Effect, Layer, ManagedRuntime } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import * as Fleet from "../packages/core/src/Flotta.js"
import * as McpServer from "../packages/mcp/src/McpServer.js"
import {
  type BenchResult,
  FAKE,
  fmtInt,
  fmtMs,
  fmtRate,
  fmtRatio,
  isMain,
  main,
  markdownTable,
  percentile,
  ROOT,
  row,
  sortedCopy,
  targetRow
} from "./lib.js"

const CALLS = Number(process.env["BENCH_CALLS"] ?? 2000)
const WARMUP = 200
const BLOCK = 250
const CLIENTS = 50
const CALLS_PER_CLIENT = 100
const RESULTS = path.join(ROOT, "bench", "RESULTS.md")

const ERAS = [
  { era: "legacy", negotiation: { mode: "legacy" } },
  { era: "modern", negotiation: { mode: { pin: "2026-07-28" } } }
] as const
type Era = (typeof ERAS)[number]

/** The bare SDK server: one no-op tool, both eras from one factory (its default stateless legacy leg). */
const baselineServer = async () => {
  const handler = createMcpHandler(() => {
    const server = new SdkServer({ name: "noop", version: "0" })
    server.registerTool("noop", { description: "does nothing" }, () => ({ content: [{ type: "text", text: "ok" }] }))
    return server
  })
  const node = toNodeHandler(handler)
  const server = http.createServer((req, res) => void node(req as Parameters<typeof node>[0], res))
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
      await handler.close()
    }
  }
}

const connect = async (url: string, era: Era) => {
  const client = new Client({ name: "bench", version: "0" }, { versionNegotiation: era.negotiation })
  await client.connect(new StreamableHTTPClientTransport(new URL(url)))
  await client.listTools()
  return client
}

interface Target {
  readonly name: string
  readonly tool: string
  readonly args: Record<string, unknown>
  readonly client: Client
}

const callOnce = async (target: Target) => {
  const started = performance.now()
  const result = await target.client.callTool({ name: target.tool, arguments: target.args })
  const ms = performance.now() - started
  if (result.isError === true) throw new Error(`${target.name}: ${JSON.stringify(result.content)}`)
  return ms
}

/** Sequential calls in alternating blocks, so drift hits every target alike. */
const sequential = async (targets: ReadonlyArray<Target>) => {
  for (const target of targets) for (let i = 0; i < WARMUP; i++) await callOnce(target)
  const samples = new Map(targets.map((t) => [t.name, [] as Array<number>]))
  for (let done = 0; done < CALLS; done += BLOCK) {
    for (const target of targets) {
      const into = samples.get(target.name)!
      for (let i = 0; i < Math.min(BLOCK, CALLS - done); i++) into.push(await callOnce(target))
    }
  }
  return new Map([...samples].map(([name, xs]) => {
    const sorted = sortedCopy(xs)
    return [name, { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99) }]
  }))
}

/** `CLIENTS` clients (eras alternating) making `CALLS_PER_CLIENT` calls each, all at once. */
const load = async (url: string, tool: string, args: Record<string, unknown>) => {
  const clients = await Promise.all(Array.from({ length: CLIENTS }, (_, i) => connect(url, ERAS[i % 2]!)))
  // One call each first: a client compiles a tool's output schema on its first call (client-side work that
  // would otherwise show as 50 simultaneous slow calls, since clients and servers share this process).
  await Promise.all(clients.map((client, i) => callOnce({ name: `client ${i}`, tool, args, client })))
  const latencies: Array<number> = []
  const errors: Array<string> = []
  const started = performance.now()
  await Promise.all(clients.map(async (client, i) => {
    for (let n = 0; n < CALLS_PER_CLIENT; n++) {
      try {
        latencies.push(await callOnce({ name: `client ${i}`, tool, args, client }))
      } catch (error) {
        errors.push(String(error))
      }
    }
  }))
  const seconds = (performance.now() - started) / 1000
  await Promise.all(clients.map((c) => c.close()))
  const sorted = sortedCopy(latencies)
  return {
    calls: latencies.length + errors.length,
    errors,
    rate: (latencies.length + errors.length) / seconds,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99)
  }
}

/** Replaces the "## MCP" section of bench/RESULTS.md (or appends it). */
const writeSection = (result: BenchResult) => {
  const section = [
    "## MCP",
    "",
    `${result.title}. ${result.method}`,
    "",
    markdownTable(result),
    "",
    ...result.notes.map((n) => `- ${n}`),
    "",
    `Run ${
      result.date.slice(0, 10)
    } on ${result.machine.cpu} (${result.machine.cpus} CPUs), Node ${result.machine.node}, ` +
    `${result.seconds.toFixed(1)} s: \`npx tsx bench/mcp-status.ts\`.`,
    ""
  ].join("\n")
  const current = fs.existsSync(RESULTS) ? fs.readFileSync(RESULTS, "utf8") : "# Benchmark results\n"
  const start = current.search(/^## MCP\s*$/m)
  let next: string
  if (start === -1) next = current.trimEnd() + "\n\n" + section
  else {
    const rest = current.slice(start + 1)
    const end = rest.search(/^## /m)
    next = current.slice(0, start) + section + (end === -1 ? "" : "\n" + rest.slice(end))
  }
  fs.writeFileSync(RESULTS, next.trimEnd() + "\n")
}

export const run = () =>
  main("mcp-status", "MCP tools/call latency over loopback HTTP", async () => {
    const fleet = Fleet.layer({ executable: { command: process.execPath, prefixArgs: [FAKE] } }).pipe(
      Layer.provide(NodeContext.layer)
    )
    const runtime = ManagedRuntime.make(McpServer.layer({ port: 0 }).pipe(Layer.provideMerge(fleet)))
    const baseline = await baselineServer()
    try {
      const flotta = await runtime.runPromise(McpServer.McpServer)
      await runtime.runPromise(Effect.flatMap(Flotta, (f) => f.spawn("bench")))
      const targets: Array<Target> = []
      for (const era of ERAS) {
        targets.push({
          name: `flotta ${era.era}`,
          tool: "flotta_status",
          args: { name: "bench" },
          client: await connect(flotta.url, era)
        })
        targets.push({ name: `noop ${era.era}`, tool: "noop", args: {}, client: await connect(baseline.url, era) })
      }
      const stats = await sequential(targets)
      await Promise.all(targets.map((t) => t.client.close()))
      const loaded = await load(flotta.url, "flotta_status", { name: "bench" })
      const loadedBaseline = await load(baseline.url, "noop", {})

      const rows = ERAS.flatMap(({ era }) => {
        const ours = stats.get(`flotta ${era}`)!
        const base = stats.get(`noop ${era}`)!
        return [
          row(`${era}: no-op tool p50 (baseline)`, fmtMs(base.p50), "", "1.00×"),
          row(`${era}: no-op tool p99 (baseline)`, fmtMs(base.p99), "", "1.00×"),
          targetRow(
            `${era}: flotta_status p50`,
            fmtMs(ours.p50),
            `${fmtMs(base.p50)} no-op`,
            fmtRatio(ours.p50, base.p50),
            "< no-op + 1 ms",
            ours.p50 < base.p50 + 1
          ),
          row(`${era}: flotta_status p99`, fmtMs(ours.p99), `${fmtMs(base.p99)} no-op`, fmtRatio(ours.p99, base.p99))
        ]
      })
      rows.push(
        targetRow(
          `load: ${CLIENTS} clients × ${CALLS_PER_CLIENT} flotta_status, errors`,
          `${loaded.errors.length} of ${fmtInt(loaded.calls)}`,
          `${loadedBaseline.errors.length} no-op`,
          "",
          "0",
          loaded.errors.length === 0 && loaded.calls === CLIENTS * CALLS_PER_CLIENT
        ),
        row(
          "load: flotta_status throughput",
          fmtRate(loaded.rate),
          `${fmtRate(loadedBaseline.rate)} no-op`,
          fmtRatio(loaded.rate, loadedBaseline.rate)
        ),
        row(
          "load: flotta_status p50",
          fmtMs(loaded.p50),
          `${fmtMs(loadedBaseline.p50)} no-op`,
          fmtRatio(loaded.p50, loadedBaseline.p50)
        ),
        row(
          "load: flotta_status p99",
          fmtMs(loaded.p99),
          `${fmtMs(loadedBaseline.p99)} no-op`,
          fmtRatio(loaded.p99, loadedBaseline.p99)
        )
      )
      const notes = [
        "Clients and servers share one process (and its event loop), so absolute figures include the SDK client's " +
        "own cost; the ratio to the no-op baseline is the figure to read.",
        "The legacy era is sessionful on the flotta server (one SDK server per session, so cancellations reach the " +
        "tool) and stateless on the baseline (a fresh SDK server and an initialize per request).",
        "An SDK client compiles a tool's output schema on its first call to it (client-side; flotta's tools have " +
        "output schemas, the no-op has none): the load run warms each client with one call before the clock starts.",
        ...(loaded.errors.length > 0 ? [`First load error: ${loaded.errors[0]}`] : [])
      ]
      return {
        method: `${fmtInt(CALLS)} sequential \`tools/call\` per server and era after ${WARMUP} warm-up calls, in ` +
          `alternating blocks of ${BLOCK}, each from one SDK client (\`@modelcontextprotocol/client\` 2.4.0, ` +
          `Streamable HTTP, fetch) on 127.0.0.1. Flotta = \`flotta_status\` on a live fake-CLI agent through the ` +
          `full server (Host/Origin guards, era routing, Effect handler, output-schema validation). Baseline = ` +
          `\`createMcpHandler\` with one no-op tool behind \`toNodeHandler\`. Load = ${CLIENTS} clients (eras ` +
          `alternating), each connected and warmed with one call, then ${CALLS_PER_CLIENT} calls each, all concurrent.`,
        rows,
        notes
      }
    } finally {
      await baseline.close()
      await runtime.dispose()
    }
  }).then((result) => {
    writeSection(result)
    return result
  })

if (isMain(import.meta.url)) await run()
