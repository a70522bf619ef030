/**
 * The settings of bench/cluster.ts (each from its BENCH_CLUSTER_* variable), its progress line, and the tally
 * of failures by what they said, which every part of it reports.
 */
import * as path from "node:path"
import { ROOT } from "../lib.js"

export const ASKS = Number(process.env["BENCH_CLUSTER_ASKS"] ?? 200)
export const AGENTS = Number(process.env["BENCH_CLUSTER_AGENTS"] ?? 300)
export const LEASE_MS = Number(process.env["BENCH_CLUSTER_LEASE_MS"] ?? 3000)
export const PG_AGENTS = Number(process.env["BENCH_CLUSTER_PG_AGENTS"] ?? 60)
export const POSTGRES = process.env["BENCH_CLUSTER_POSTGRES"] !== "0"
export const KEEP = process.env["BENCH_CLUSTER_KEEP"] === "1"
export const WARMUP = 20
export const STARTS = 8
/** Spawn calls in flight at once: enough to keep every node's admission (STARTS) busy. */
export const IN_FLIGHT = Number(process.env["BENCH_CLUSTER_IN_FLIGHT"] ?? 3 * STARTS)
export const FLOTTA = path.join(ROOT, "packages/flotta/bin/flotta.js")
export const TEXT = "hello"
export const EXPECTED = `echo: ${TEXT}`
export const HOSTS = ["node-a", "node-b", "node-c"] as const

export const began = performance.now()
/** A progress line on stdout: which part runs, since the start. */
export const say = (text: string) =>
  console.log(`[cluster ${((performance.now() - began) / 1000).toFixed(1)} s] ${text}`)

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

// ------------------------------------------------------------------------------------------------ failures

/** Failures by what they said (the tool's error, shortened), and how often. */
export type Tally = Map<string, number>

export const tally = (t: Tally, error: unknown) => {
  const text = (error instanceof Error ? error.message : String(error)).replace(/\s+/g, " ")
  // The agent's name varies; the kind of failure is what counts.
  const what = text
    .replace(/ \(live agents:[^)]*\)?/g, "")
    .replace(/agent-\d+/g, "agent-N")
    .replace(/"probe"|probe/g, "agent-N")
    // The first sentence says what happened; the rest is advice.
    .split(/\. (?=[A-Z])/)[0]!
    .slice(0, 160)
  t.set(what, (t.get(what) ?? 0) + 1)
}

export const total = (t: Tally) => [...t.values()].reduce((a, b) => a + b, 0)

export const fmtTally = (t: Tally) => [...t.entries()].map(([what, n]) => `${n}× ${what}`).join("; ")
