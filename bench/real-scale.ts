/**
 * Real scale: 100 sessions of the real `claude` binary, offline against the fake Messages API, started at once
 * through the fleet (default admission), then one broadcast. The baseline is ONE real session started alone,
 * measured first in the same run. Needs ~125 MiB of RAM per session and a few minutes.
 *   npx tsx bench/real-scale.ts        (BENCH_REAL_AGENTS=100)
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
  fmtKiB,
  fmtMiB,
  fmtRatio,
  fmtS,
  heapAfterGc,
  isMain,
  main,
  median,
  processTree,
  pss,
  ROOT,
  row,
  rss,
  startFakeApi,
  sum,
  survivors,
  targetRow
} from "./lib.js"

const AGENTS = Number(process.env["BENCH_REAL_AGENTS"] ?? 100)
const TEXT = "ECHO hi"
const EXPECTED = "ECHO: hi"
const PSS_BUDGET = 125 * 1024 * 1024

const errorText = (error: unknown) => {
  const e = error as { readonly _tag?: string; readonly message?: string; readonly stderr?: string }
  const stderr = e.stderr === undefined || e.stderr === ""
    ? ""
    : ` | stderr: ${e.stderr.split("\n").slice(-3).join(" / ")}`
  return `${e._tag ?? "Error"}: ${e.message ?? String(error)}${stderr}`
}

/** Each agent gets its own HOME/config/tmp (offlineEnv) and an empty working directory. */
const agentSetup = (root: string, api: FakeApi, name: string) => {
  const dir = path.join(root, name)
  const cwd = path.join(dir, "work")
  fs.mkdirSync(cwd, { recursive: true })
  return { env: offlineEnv(api, dir), cwd }
}

const memoryOf = (pid: number) => {
  const tree = processTree(pid)
  return { pss: sum(tree.map(pss)), rss: sum(tree.map(rss)), tree }
}

export const run = () =>
  main("real-scale", `4. Real scale (${AGENTS} real claude sessions, fake Messages API)`, async () => {
    const notes: Array<string> = []
    const available = availableMemory()
    if (available < AGENTS * PSS_BUDGET) {
      notes.push(
        `Warning: ${fmtMiB(available)} available for ${AGENTS} sessions (~${fmtMiB(AGENTS * PSS_BUDGET)} expected).`
      )
    }
    const api = await startFakeApi()
    let requests: number | undefined
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "flotta-bench-real-"))
    const fleets: Array<Fleet> = []
    try {
      // --- the baseline: one session alone ------------------------------------------------------------------
      const soloFleet = createFleet({ claudePath: CLAUDE })
      fleets.push(soloFleet)
      await soloFleet.list() // builds the runtime, so "before" holds it
      const soloBefore = await heapAfterGc()
      const s0 = performance.now()
      const soloInfo = await soloFleet.spawn("solo", agentSetup(root, api, "solo"))
      const soloReadyMs = performance.now() - s0
      const soloHeap = (await heapAfterGc()) - soloBefore
      const s1 = performance.now()
      const soloReply = await soloFleet.ask("solo", TEXT, { timeout: "5 minutes" })
      const soloAnswerMs = performance.now() - s1
      const soloMemory = memoryOf(soloInfo.pid ?? -1)
      await soloFleet.shutdown()
      const soloLeft = survivors(soloMemory.tree).length
      if (soloReply !== EXPECTED) notes.push(`MISS: the solo session answered "${soloReply}".`)

      // --- the fleet: N sessions at once ----------------------------------------------------------------------
      const fleet = createFleet({ claudePath: CLAUDE })
      fleets.push(fleet)
      await fleet.list()
      const names = Array.from({ length: AGENTS }, (_, i) => `real-${i}`)
      const setups = names.map((n) => agentSetup(root, api, n))
      const before = await heapAfterGc()
      const t0 = performance.now()
      const readyAt: Array<number> = []
      const started = await Promise.allSettled(names.map((n, i) =>
        fleet.spawn(n, setups[i]!).then((info) => {
          readyAt.push(performance.now() - t0)
          return info
        })
      ))
      const readyMs = performance.now() - t0
      const infos = started.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []))
      const failures = started.flatMap((
        s,
        i
      ) => (s.status === "rejected" ? [`${names[i]}: ${errorText(s.reason)}`] : []))
      const live = infos.length
      const heapPerAgent = live === 0 ? 0 : ((await heapAfterGc()) - before) / live
      const idlePss = infos.map((i) => memoryOf(i.pid ?? -1).pss)

      const t1 = performance.now()
      const outcomes = await fleet.broadcast(TEXT, { timeout: "10 minutes" })
      const answerMs = performance.now() - t1
      const bad = outcomes.filter((o) => !o.ok || o.text !== EXPECTED)
      const memories = infos.map((i) => memoryOf(i.pid ?? -1))
      const pssEach = memories.map((m) => m.pss)
      const rssEach = memories.map((m) => m.rss)
      const pids = memories.flatMap((m) => m.tree)
      const heapAfterTurn = live === 0 ? 0 : ((await heapAfterGc()) - before) / live

      const s2 = performance.now()
      await fleet.shutdown()
      const shutdownMs = performance.now() - s2
      const left = survivors(pids)
      requests = await api.stop()

      const pssMean = pssEach.length === 0 ? 0 : sum(pssEach) / pssEach.length
      const rssMean = rssEach.length === 0 ? 0 : sum(rssEach) / rssEach.length
      const sortedReady = [...readyAt].sort((a, b) => a - b)
      notes.push(
        `Ready times: first ${fmtS(sortedReady[0] ?? 0)}, median ${fmtS(median(readyAt))}, last ${fmtS(readyMs)}. ` +
          `PSS per child idle before the turn: ${fmtMiB(median(idlePss))} (median); after it: median ` +
          `${fmtMiB(median(pssEach))}, max ${fmtMiB(Math.max(0, ...pssEach))}, total ${fmtMiB(sum(pssEach))}; ` +
          `RSS per child ${fmtMiB(rssMean)} (solo ${fmtMiB(soloMemory.rss)}). Heap per agent after the turn ` +
          `${fmtKiB(heapAfterTurn)}. Fake API requests: ${requests} (expected ${1 + live}). ` +
          `Shutdown of ${live} sessions took ${fmtS(shutdownMs)}.`
      )
      if (failures.length > 0) {
        notes.push(`MISS: ${failures.length} of ${AGENTS} sessions failed to start:`)
        for (const f of failures.slice(0, 10)) notes.push(`  ${f}`)
        if (failures.length > 10) notes.push(`  ... and ${failures.length - 10} more`)
      }
      if (bad.length > 0) {
        notes.push(`MISS: ${bad.length} sessions did not answer "${EXPECTED}":`)
        for (const o of bad.slice(0, 10)) {
          notes.push(`  ${o.name}: ${o.ok ? `"${o.text}"` : `${o.error._tag}: ${o.error.message}`}`)
        }
      }
      if (left.length > 0) {
        notes.push(`MISS: processes left after shutdown: ${left.map((s) => `${s.pid}:${s.state}`).join(" ")}`)
      }

      return {
        method: `The real CLI (\`${path.relative(ROOT, CLAUDE)}\`), offline against the fake Messages API ` +
          `(test/support/FakeMessagesApi.ts, in its own process); each agent has its own HOME/CLAUDE_CONFIG_DIR/` +
          `tmp from \`offlineEnv\` (passed with spawn's \`env\`) and an empty temp cwd. Baseline: ONE session ` +
          `started alone through a fleet, then asked "${TEXT}", measured first. Then ${AGENTS} \`spawn\` calls at ` +
          `once (default admission: \`maxConcurrentStarts\` = max(2, 2 × cores)), one \`broadcast("${TEXT}")\`. ` +
          `PSS = sum of \`Pss\` in /proc/<pid>/smaps_rollup over the child and its descendants, after the turn. ` +
          `Heap = \`heapUsed\` after forced GCs, all sessions idle, minus before, ÷ live sessions.`,
        rows: [
          row("one session alone: spawn → ready (baseline)", fmtS(soloReadyMs), "", "1.00×"),
          row("one session alone: ask (baseline)", fmtS(soloAnswerMs), "", "1.00×"),
          row(`all ${AGENTS} ready`, fmtS(readyMs), `${fmtS(soloReadyMs)} alone`, fmtRatio(readyMs, soloReadyMs)),
          row(
            "  ready time per session (total ÷ N)",
            fmtS(readyMs / AGENTS),
            `${fmtS(soloReadyMs)} alone`,
            fmtRatio(readyMs / AGENTS, soloReadyMs)
          ),
          row(
            `all ${AGENTS} answered (broadcast)`,
            fmtS(answerMs),
            `${fmtS(soloAnswerMs)} alone`,
            fmtRatio(answerMs, soloAnswerMs)
          ),
          row(
            "  start + answer, all",
            fmtS(readyMs + answerMs),
            `${fmtS(soloReadyMs + soloAnswerMs)} alone`,
            fmtRatio(readyMs + answerMs, soloReadyMs + soloAnswerMs)
          ),
          row(
            "PSS per child (mean)",
            fmtMiB(pssMean),
            `${fmtMiB(soloMemory.pss)} alone`,
            fmtRatio(pssMean, soloMemory.pss),
            "(~125 MiB budget, CLAUDE-CLI.md)"
          ),
          row(
            "fleet heap per session",
            fmtKiB(heapPerAgent),
            `${fmtKiB(soloHeap)} alone`,
            fmtRatio(heapPerAgent, soloHeap)
          ),
          targetRow("sessions failed to start", String(failures.length), "0 alone", "", "0", failures.length === 0),
          targetRow(
            "wrong or missing answers",
            String(bad.length),
            soloReply === EXPECTED ? "0 alone" : "1 alone",
            "",
            "0",
            bad.length === 0
          ),
          targetRow(
            "processes left after shutdown",
            String(left.length),
            `${soloLeft} alone`,
            "",
            "0",
            left.length === 0
          )
        ],
        notes
      }
    } finally {
      // Whatever happened, no CLI may outlive the benchmark.
      for (const f of fleets) await f.shutdown().catch(() => undefined)
      if (requests === undefined) await api.stop()
      fs.rmSync(root, { recursive: true, force: true })
    }
  })

if (isMain(import.meta.url)) await run()
