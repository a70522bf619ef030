/**
 * How bench/cluster.ts reports: its table rows (latency, fleet, failover) and the notes that say what missed.
 */
import { fmtMs, fmtRatio, fmtS, idleShare, percentile, type Row, row, sortedCopy, targetRow } from "../lib.js"
import type { ClusterRun, Failover, Fleet, Latency } from "./cluster-measures.js"
import { fmtTally, LEASE_MS, say, total } from "./cluster-settings.js"

// ------------------------------------------------------------------------------------------------ the report

export const fmtHosts = (hosts: ReadonlyMap<string, number>) =>
  hosts.size === 0 ? "none" : [...hosts.entries()].sort().map(([host, n]) => `${host} ${n}`).join(", ")

export const p50 = (xs: ReadonlyArray<number>) => percentile(sortedCopy(xs), 0.5)
export const p90 = (xs: ReadonlyArray<number>) => percentile(sortedCopy(xs), 0.9)
export const fmtLatency = (xs: ReadonlyArray<number>) =>
  xs.length === 0 ? "none answered" : `${fmtMs(p50(xs), 2)} (p90 ${fmtMs(p90(xs), 2)})`

/** Lets the children of the previous part finish exiting (at most 30 s). */
export const quiet = async () => {
  for (let i = 0; i < 30; i++) if ((await idleShare(1000)) > 0.85) return
}

export const latencyRows = (label: string, latency: Latency): Array<Row> => [
  row(`${label}: ask, local (median, p90)`, fmtLatency(latency.local), "", "1.00×"),
  row(
    `${label}: ask, remote (median, p90)`,
    fmtLatency(latency.remote),
    `${fmtMs(p50(latency.local), 2)} local`,
    fmtRatio(p50(latency.remote), p50(latency.local))
  )
]

export const fleetRows = (label: string, fleet: Fleet, count: number, baseline: Fleet | undefined): Array<Row> => {
  const failed = (f: Fleet) => (total(f.spawnFailures) === 0 ? "" : ` (${total(f.spawnFailures)} failed)`)
  const missed = (f: Fleet) => (f.answered === count ? "" : ` (${f.answered} of ${count} answered)`)
  return [
    targetRow(
      `${label}: spawn ${count} agents over 3 nodes`,
      fmtS(fleet.spawnMs) + failed(fleet),
      baseline === undefined ? "" : `${fmtS(baseline.spawnMs)}${failed(baseline)} on 1 plain node`,
      baseline === undefined ? "" : fmtRatio(fleet.spawnMs, baseline.spawnMs),
      `all ${count} up`,
      total(fleet.spawnFailures) === 0 && fleet.gone === 0
    ),
    targetRow(
      `${label}: broadcast to ${count} agents`,
      fmtS(fleet.broadcastMs) + missed(fleet),
      baseline === undefined ? "" : `${fmtS(baseline.broadcastMs)}${missed(baseline)} on 1 plain node`,
      baseline === undefined ? "" : fmtRatio(fleet.broadcastMs, baseline.broadcastMs),
      `all ${count} answer`,
      fleet.answered === count
    )
  ]
}

export const failoverRows = (label: string, f: Failover): Array<Row> => {
  const last = f.times[f.times.length - 1]
  if (f.moved === 0) {
    return [
      targetRow(
        `${label}: kill -9 → last moved agent answers`,
        "no agent lived on node-c at the kill",
        `lease ${fmtS(LEASE_MS)}`,
        "n/a",
        "all answer; no live host's agent moved or lost",
        false
      )
    ]
  }
  return [
    targetRow(
      `${label}: kill -9 → last of ${f.moved} moved agents answers`,
      f.answered === f.moved && last !== undefined
        ? fmtS(last)
        : `${f.answered} of ${f.moved} answered within ${fmtS(f.deadlineMs)}`,
      `lease ${fmtS(LEASE_MS)}`,
      f.answered === f.moved && last !== undefined ? fmtRatio(last, LEASE_MS) : "n/a",
      "all answer; no live host's agent moved or lost",
      f.moved > 0 && f.answered === f.moved && f.spuriousMoves === 0 && f.lost === 0 && f.twice.length === 0
    ),
    row(
      `${label}: kill -9 → first / median moved agent answers`,
      f.times.length === 0 ? "none" : `${fmtS(f.times[0]!)} / ${fmtS(p50(f.times))}`,
      `lease ${fmtS(LEASE_MS)}`,
      f.times.length === 0 ? "n/a" : `${fmtRatio(f.times[0]!, LEASE_MS)} / ${fmtRatio(p50(f.times), LEASE_MS)}`
    )
  ]
}

export const clusterNotes = (label: string, r: ClusterRun, count: number): Array<string> => {
  const notes: Array<string> = []
  const f = r.failover
  notes.push(
    `${label}: the ${count} agents, live after the spawns: ${fmtHosts(r.fleet.hosts)}; the broadcast had ` +
      `entries for ${r.fleet.reached} and ${r.fleet.answered} answered. After the kill -9 of node-c ` +
      `(${f.moved} agents): ${f.answered} answered again from node-a; live afterwards: ${fmtHosts(f.hostsAfter)}` +
      `; closed copies still listed: ${f.closedAfter}. Load average at each phase's start: ` +
      `${r.loads.map((l) => l.toFixed(1)).join(", ")}.`
  )
  const misses: Array<string> = []
  if (r.startFailures.length > 0) misses.push(`nodes exited at start: ${r.startFailures.join("; ")}`)
  if (total(r.ask.failures) > 0) misses.push(`asks failed: ${fmtTally(r.ask.failures)}`)
  if (total(r.fleet.spawnFailures) > 0) misses.push(`spawns failed: ${fmtTally(r.fleet.spawnFailures)}`)
  if (r.fleet.gone > 0) {
    misses.push(
      `${r.fleet.gone} agents were spawned (the call succeeded) but not live right after the spawns; their ` +
        `reports: ${r.fleet.vanished.join("; ")}`
    )
  }
  if (r.fleet.answered !== count) {
    misses.push(
      `the broadcast missed ${count - r.fleet.answered}` +
        (total(r.fleet.broadcastFailures) === 0 ? "" : `: ${fmtTally(r.fleet.broadcastFailures)}`)
    )
  }
  if (f.spuriousBeforeKill > 0) {
    misses.push(
      `before the kill, the nodes moved ${f.spuriousBeforeKill} agents away from each other ("whose lease ` +
        "lapsed\", though all three were running)"
    )
  }
  if (f.spuriousMoves > 0) {
    misses.push(
      `after the kill, the survivors moved ${f.spuriousMoves} agents away from each other ("whose lease lapsed", ` +
        "though both were running)"
    )
  }
  if (f.lost > 0) misses.push(`${f.lost} agent(s) of the surviving hosts were not live afterwards`)
  if (f.twice.length > 0) misses.push(`live on two hosts at once afterwards: ${f.twice.join(", ")}`)
  if (misses.length > 0) {
    notes.push(`MISS (${label}): ${misses.map((m) => m.charAt(0).toUpperCase() + m.slice(1)).join(". ")}.`)
  }
  return notes
}

/** A cluster run that threw: the note says where and why; its nodes are stopped in the end (`finally`). */
export const stopped = (notes: Array<string>, label: string) => (error: unknown) => {
  const text = error instanceof Error
    ? `${error.message}${error.cause instanceof Error ? `: ${error.cause.message}` : ""}`
    : String(error)
  say(`${label} cluster: stopped: ${text}`)
  notes.push(`MISS (${label}): the run stopped: ${text.replace(/\s+/g, " ").slice(0, 300)}.`)
  return undefined
}
