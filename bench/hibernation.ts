/**
 * Hibernation at scale: 2,000 named real `claude` sessions on this machine under `maxLive: 40`, offline against
 * the fake Messages API. Each is spawned and taught its own fact (phase 1: past 40 live, the session idle the
 * longest hibernates), then each is woken and asked to recall it (phase 2). Claude processes are counted from
 * /proc every 100 ms throughout. Baselines measured in the same run: a cold spawn (a session started alone, and the
 * spawns of phase 1 under the same load as the wakes), and the heap of an empty fleet.
 *   npx tsx bench/hibernation.ts        (BENCH_SLEEP_AGENTS=2000 BENCH_SLEEP_MAX_LIVE=40 BENCH_SLEEP_PARALLEL=32)
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { createFleet } from "../packages/core/src/Client.js"
import type { Fleet } from "../packages/core/src/Client.js"
import { offlineEnv } from "../test/support/FakeMessagesApi.js"
import {
  availableMemory,
  CLAUDE,
  type FakeApi,
  fmtInt,
  fmtKiB,
  fmtMiB,
  fmtRatio,
  fmtS,
  heapAfterGc,
  isMain,
  limiter,
  main,
  median,
  percentile,
  row,
  settle,
  sortedCopy,
  startFakeApi,
  targetRow
} from "./lib.js"

const AGENTS = Number(process.env["BENCH_SLEEP_AGENTS"] ?? 2000)
const MAX_LIVE = Number(process.env["BENCH_SLEEP_MAX_LIVE"] ?? 40)
/** Sessions worked on at once: fewer than maxLive, so that a start finds a taught session to put to sleep. */
const PARALLEL = Number(process.env["BENCH_SLEEP_PARALLEL"] ?? Math.max(1, Math.floor(MAX_LIVE * 0.8)))
const HEAP_TARGET = 16 * 1024

/** Each agent has its own HOME/config/tmp and an empty working directory (as bench/real-scale.ts). */
const agentSetup = (root: string, api: FakeApi, name: string) => {
  const dir = path.join(root, name)
  const cwd = path.join(dir, "work")
  fs.mkdirSync(cwd, { recursive: true })
  return { env: offlineEnv(api, dir), cwd }
}

/** The claude processes this process runs now. */
const claudeChildren = () => {
  let count = 0
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8")
      const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
      if (parent === process.pid && fs.readlinkSync(`/proc/${entry}/exe`).includes("claude")) count++
    } catch {
      // gone meanwhile
    }
  }
  return count
}

const timed = async <A>(f: () => Promise<A>) => {
  const t0 = performance.now()
  const value = await f()
  return { value, ms: performance.now() - t0 }
}

export const run = () =>
  main("hibernation", `Hibernation (${fmtInt(AGENTS)} real claude sessions, maxLive ${MAX_LIVE})`, async () => {
    const notes: Array<string> = []
    const needed = MAX_LIVE * 125 * 1024 * 1024
    if (availableMemory() < needed) {
      notes.push(`Warning: ${fmtMiB(availableMemory())} available for ${MAX_LIVE} live sessions.`)
    }
    const api = await startFakeApi()
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "flotta-bench-sleep-"))
    const fleets: Array<Fleet> = []
    let most = 0
    const sampler = setInterval(() => (most = Math.max(most, claudeChildren())), 100)
    try {
      // --- the baseline: cold spawns of sessions started alone --------------------------------------------------
      const solo = createFleet({ claudePath: CLAUDE })
      fleets.push(solo)
      await solo.list()
      // ... and wakes of sessions alone: taught, put to sleep, woken with --resume while nothing else runs.
      const soloSpawns: Array<number> = []
      const soloWakes: Array<number> = []
      for (let i = 0; i < 5; i++) {
        const name = `solo-${i}`
        soloSpawns.push((await timed(() => solo.spawn(name, agentSetup(root, api, name)))).ms)
        await solo.ask(name, `REMEMBER the code of ${name}`, { timeout: "5 minutes" })
        await solo.hibernate(name)
        soloWakes.push((await timed(() => solo.wake(name))).ms)
        const recalled = await solo.ask(name, "RECALL", { timeout: "5 minutes" })
        if (recalled !== `The fact is: the code of ${name}`) notes.push(`  wrong: ${name} alone: ${recalled}`)
        await solo.close(name)
      }
      await solo.shutdown()
      const coldAlone = median(soloSpawns)
      const wakeAlone = median(soloWakes)

      // --- phase 1: spawn and teach every session ---------------------------------------------------------------
      // A durable store, as a fleet of thousands living for weeks would have: its record is on disk, not in the heap.
      const fleet = createFleet({
        claudePath: CLAUDE,
        maxLive: MAX_LIVE,
        store: { sqlite: path.join(root, "state.db") }
      })
      fleets.push(fleet)
      await fleet.list()
      const emptyHeap = await heapAfterGc()
      const names = Array.from({ length: AGENTS }, (_, i) => `s-${i}`)
      const fact = (name: string) => `the code of ${name}`
      const at = limiter(PARALLEL)
      const spawnMs: Array<number> = []
      const taughtWrong: Array<string> = []
      const t1 = performance.now()
      await Promise.all(names.map((name) =>
        at(async () => {
          const spawned = await timed(() => fleet.spawn(name, agentSetup(root, api, name)))
          spawnMs.push(spawned.ms)
          const reply = await fleet.ask(name, `REMEMBER ${fact(name)}`, { timeout: "5 minutes" })
          if (reply !== "OK, I will remember that.") taughtWrong.push(`${name}: ${reply}`)
        })
      ))
      const teachMs = performance.now() - t1
      const asleep = (await fleet.list()).filter((a) => a.status === "hibernated").length

      // --- phase 2: wake every session and ask it to recall its fact --------------------------------------------
      const wakeMs: Array<number> = []
      const recalledWrong: Array<string> = []
      const t2 = performance.now()
      await Promise.all(names.map((name) =>
        at(async () => {
          const woke = await timed(() => fleet.wake(name))
          if (woke.value) wakeMs.push(woke.ms)
          const reply = await fleet.ask(name, "RECALL", { timeout: "5 minutes" })
          if (reply !== `The fact is: ${fact(name)}`) recalledWrong.push(`${name}: ${reply}`)
        })
      ))
      const recallMs = performance.now() - t2

      // --- the heap of sleepers: every session asleep -----------------------------------------------------------
      for (const agent of await fleet.list()) if (agent.status !== "hibernated") await fleet.hibernate(agent.name)
      const sleepers = (await fleet.list()).filter((a) => a.status === "hibernated").length
      // What waits to be written is committed first: the writes in flight are not the sleepers' heap.
      for (let i = 0; i < 200 && (await fleet.store()).health.pending > 0; i++) await settle(50)
      const heapPerSleeper = ((await heapAfterGc()) - emptyHeap) / Math.max(1, sleepers)
      const liveAfter = (await fleet.processes()).live
      clearInterval(sampler)
      await fleet.shutdown()
      const requests = await api.stop()

      const wakeP50 = median(wakeMs)
      const spawnP50 = median(spawnMs)
      const wrong = taughtWrong.length + recalledWrong.length
      notes.push(
        `Phase 1 (spawn + teach, ${PARALLEL} at once): ${fmtS(teachMs)}; ${asleep} of ${AGENTS} asleep after it. ` +
          `Phase 2 (wake + recall): ${fmtS(recallMs)}; ${wakeMs.length} wakes, p90 ${
            fmtS(percentile(sortedCopy(wakeMs), 0.9))
          }, cold spawns in phase 1 p90 ${fmtS(percentile(sortedCopy(spawnMs), 0.9))}. ` +
          `Live processes at the end (after every session was put to sleep): ${liveAfter}. ` +
          `Fake API requests: ${requests}.`
      )
      for (const miss of [...taughtWrong, ...recalledWrong].slice(0, 10)) notes.push(`  wrong: ${miss}`)

      return {
        method: `The real CLI, offline against the fake Messages API (in its own process); each session has its own ` +
          `HOME/CLAUDE_CONFIG_DIR/tmp and cwd. A fleet with \`maxLive: ${MAX_LIVE}\` spawns ${
            fmtInt(AGENTS)
          } sessions, ` +
          `${PARALLEL} at a time, and teaches each its own fact (\`REMEMBER\`); then wakes each (\`wake\`, timed ` +
          `until its process is up) and asks it to \`RECALL\`, ${PARALLEL} at a time. Claude processes (children of ` +
          `this process whose program is the claude binary) are counted from /proc every 100 ms throughout. ` +
          `Baselines: a cold spawn of one session alone (median of 5; beside it, the wake of one session alone, ` +
          `taught, put to sleep and woken while nothing else runs), and the spawns of phase 1, which ran under ` +
          `the same load as the wakes: ${PARALLEL} starts in flight on ${os.availableParallelism()} cores, each ` +
          `claude start about 0.6 s of CPU, so a start under that load waits its turn for the CPU (and for one of ` +
          `the fleet's start slots). The store is an SQLite file. Heap = \`heapUsed\` after forced GCs with every ` +
          `session asleep and the store's writes committed, minus the empty fleet's, ÷ sleepers.`,
        rows: [
          row("cold spawn, one session alone (baseline)", fmtS(coldAlone), "", "1.00×"),
          targetRow(
            "wake of one session alone (median of 5)",
            fmtS(wakeAlone),
            `${fmtS(coldAlone)} cold spawn alone`,
            fmtRatio(wakeAlone, coldAlone),
            "≤ 1.5× a cold spawn",
            wakeAlone <= 1.5 * coldAlone
          ),
          row("cold spawn in phase 1, p50 (baseline under load)", fmtS(spawnP50), `${fmtS(coldAlone)} alone`, ""),
          targetRow(
            "wake p50 (process up again, --resume)",
            fmtS(wakeP50),
            `${fmtS(spawnP50)} cold spawn under load`,
            fmtRatio(wakeP50, spawnP50),
            "≤ 1.5× a cold spawn",
            wakeP50 <= 1.5 * spawnP50
          ),
          row(
            "  wake p50 against a spawn alone",
            fmtS(wakeP50),
            `${fmtS(coldAlone)} alone`,
            fmtRatio(wakeP50, coldAlone)
          ),
          targetRow(
            "claude processes at once, most sampled",
            String(most),
            `maxLive ${MAX_LIVE}`,
            fmtRatio(most, MAX_LIVE),
            `≤ ${MAX_LIVE}`,
            most <= MAX_LIVE
          ),
          targetRow(
            "sessions taught and recalling their own fact",
            `${fmtInt(AGENTS - new Set([...taughtWrong, ...recalledWrong].map((w) => w.split(":")[0])).size)} of ${
              fmtInt(AGENTS)
            }`,
            "",
            "",
            `${fmtInt(AGENTS)} of ${fmtInt(AGENTS)}`,
            wrong === 0
          ),
          targetRow(
            "fleet heap per hibernated session",
            fmtKiB(heapPerSleeper),
            "the empty fleet",
            "",
            `≤ ${fmtKiB(HEAP_TARGET)}`,
            heapPerSleeper <= HEAP_TARGET
          )
        ],
        notes
      }
    } finally {
      clearInterval(sampler)
      for (const f of fleets) await f.shutdown().catch(() => undefined)
      fs.rmSync(root, { recursive: true, force: true })
    }
  })

if (isMain(import.meta.url)) await run()
