/**
 * What exporting telemetry costs the fleet: turns over the in-memory Claude with Effect's own tracer (the
 * baseline, nothing exported) against the same turns with `Otlp.layer` on, every turn's span and the metrics sent
 * over OTLP/HTTP JSON to a collector on 127.0.0.1 that reads and drops them. The clock stops once the layer has
 * closed, so the export's flush is inside the measured time.
 *   npx tsx bench/telemetry.ts        (BENCH_TURNS=2000, BENCH_ROUNDS=5)
 */
import { Effect, Layer, TestContext } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { Flotta } from "../packages/core/src/Flotta.js"
import * as Otlp from "../packages/core/src/Otlp.js"
import * as Testing from "../packages/core/src/Testing.js"
import { fmtInt, fmtKiB, fmtMs, fmtRatio, fmtUs, isMain, main, median, row } from "./lib.js"

const TURNS = Number(process.env["BENCH_TURNS"] ?? 2000)
const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 5)
const AGENTS = 20

/** A collector that reads each export whole and answers 200; it counts what it was sent. */
const collector = async () => {
  const received = { bytes: 0, traces: 0 }
  const server = http.createServer((request, response) => {
    request.on("data", (chunk: Buffer) => (received.bytes += chunk.length))
    request.on("end", () => {
      if (request.url === "/v1/traces") received.traces++
      response.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}`, received, close: () => server.close() }
}

const turns = (otlp: string | undefined) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const started = performance.now()
      yield* Effect.gen(function*() {
        const fleet = yield* Flotta
        const names = Array.from({ length: AGENTS }, (_, i) => `a${i}`)
        yield* Effect.forEach(names, (name) => fleet.spawn(name), { discard: true })
        yield* Effect.forEach(
          Array.from({ length: TURNS }, (_, i) => i),
          (i) => fleet.ask(names[i % AGENTS]!, `${i}`),
          { concurrency: AGENTS, discard: true }
        )
      }).pipe(
        Effect.provide(
          Testing.layer({ model: ({ prompt }) => `ok ${prompt}` }).pipe(
            Layer.provideMerge(
              otlp === undefined ? Layer.empty : Otlp.layer({ otlp }, { shutdownTimeout: "30 seconds" })
            )
          )
        )
      )
      return performance.now() - started
    }).pipe(Effect.provide(TestContext.TestContext))
  )

export const run = () =>
  main("telemetry", "OpenTelemetry export: what it costs the fleet", async () => {
    const sink = await collector()
    const plain: Array<number> = []
    const exported: Array<number> = []
    await turns(undefined) // warm-up
    await turns(sink.url)
    const before = { ...sink.received }
    for (let i = 0; i < ROUNDS; i++) {
      plain.push(await turns(undefined))
      exported.push(await turns(sink.url))
    }
    sink.close()
    const bytesPerRound = (sink.received.bytes - before.bytes) / ROUNDS
    if (bytesPerRound === 0) throw new Error("the collector received nothing")
    const plainMs = median(plain)
    const exportedMs = median(exported)
    return {
      method: `Medians of ${ROUNDS} rounds. ${fmtInt(TURNS)} turns over ${AGENTS} agents of the in-memory Claude ` +
        `(\`Testing.layer\`, TestContext), fleet built and closed inside the clock. Baseline: no telemetry ` +
        `(Effect's own tracer). Measured: \`Otlp.layer({ otlp })\` on, spans through the batch processor and ` +
        `metrics to a collector on 127.0.0.1 that reads and drops them; the flush at close is inside the clock.`,
      rows: [
        row(`${fmtInt(TURNS)} turns, nothing exported (baseline)`, fmtMs(plainMs, 1), "", "1.00×"),
        row(
          `${fmtInt(TURNS)} turns, exported over OTLP/HTTP`,
          fmtMs(exportedMs, 1),
          `${fmtMs(plainMs, 1)} without`,
          fmtRatio(exportedMs, plainMs)
        ),
        row("per turn, added", fmtUs((exportedMs - plainMs) / TURNS), `${fmtUs(plainMs / TURNS)} per turn without`),
        row("sent to the collector per turn", fmtKiB(bytesPerRound / TURNS))
      ],
      notes: []
    }
  })

if (isMain(import.meta.url)) await run()
