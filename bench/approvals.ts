/**
 * What a human approval costs the fleet, apart from the human: turns with one Write call each over the in-memory
 * Claude, the Write allowed by policy (the baseline) against the Write in `ask` and decided at once by a program
 * subscribed to new approvals (pending approval, report entries, store state, the live stream, `decide`). And
 * parking: 100 agents on one login, one usage limit parks them all, a manual unpark resumes them.
 *   npx tsx bench/approvals.ts        (BENCH_TURNS=2000, BENCH_ROUNDS=5)
 */
import { Effect, Fiber, Scope, Stream, TestContext } from "effect"
import { Flotta } from "../packages/core/src/Flotta.js"
import type { Policy } from "../packages/core/src/Permission.js"
import * as Testing from "../packages/core/src/Testing.js"
import { fmtInt, fmtMs, fmtRatio, fmtUs, isMain, main, median, row } from "./lib.js"

const TURNS = Number(process.env["BENCH_TURNS"] ?? 2000)
const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 5)
const AGENTS = 20

const writes: Testing.Model = ({ prompt }) =>
  Testing.toolUse("Write", { file_path: `${prompt}.txt`, content: "x" }, (d) => (d.behavior === "allow" ? "ok" : "no"))

/** TURNS turns spread over AGENTS agents; with `approve`, a subscriber decides each approval as it comes. */
const turns = (permission: Policy, approve: boolean) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const names = Array.from({ length: AGENTS }, (_, i) => `w${i}`)
      yield* Effect.forEach(names, (name) => fleet.spawn(name, { permission }), { discard: true })
      const scope = yield* Scope.make()
      if (approve) {
        const stream = yield* Scope.extend(fleet.subscribeApprovals, scope)
        yield* Effect.forkIn(
          Stream.runForEach(stream, (approval) => Effect.ignore(fleet.decide(approval.id, { behavior: "allow" }))),
          scope
        )
      }
      const started = performance.now()
      const replies = yield* Effect.forEach(
        Array.from({ length: TURNS }, (_, i) => i),
        (i) => fleet.ask(names[i % AGENTS]!, `f${i}`),
        { concurrency: AGENTS }
      )
      const ms = performance.now() - started
      if (replies.some((reply) => reply !== "ok")) {
        throw new Error(`a Write was not allowed: ${replies.find((r) => r !== "ok")}`)
      }
      yield* Scope.close(scope, { _tag: "Success", value: undefined } as never)
      return ms
    }).pipe(Effect.provide(Testing.layer({ model: writes })), Effect.provide(TestContext.TestContext))
  )

/** 100 agents on one login: the first one's turn hits the limit and all park; a manual unpark resumes them. */
const parkAndResume = () =>
  Effect.runPromise(
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const names = Array.from({ length: 100 }, (_, i) => `p${i}`)
      yield* Effect.forEach(names, (name) => fleet.spawn(name), { discard: true })
      const started = performance.now()
      const hit = yield* Effect.fork(fleet.ask("p0", "limit"))
      while ((yield* fleet.parking).flatMap((g) => g.agents).length < names.length) yield* Effect.yieldNow()
      const parkedMs = performance.now() - started
      yield* fleet.unpark()
      yield* Fiber.join(hit)
      return { parkedMs, allMs: performance.now() - started }
    }).pipe(
      Effect.provide(Testing.layer({
        model: ({ prompt, resumed }) =>
          prompt === "limit" && resumed !== true ? Testing.usageLimit({ resetIn: "1 hour" }) : "resumed",
        parkStagger: "0 millis"
      })),
      Effect.provide(TestContext.TestContext)
    )
  )

export const run = () =>
  main("approvals", "Human approvals and parking: the fleet's own cost", async () => {
    const allowed: Array<number> = []
    const approved: Array<number> = []
    const parks: Array<{ parkedMs: number; allMs: number }> = []
    await turns({ allow: ["Write"] }, false) // warm-up
    for (let i = 0; i < ROUNDS; i++) {
      allowed.push(await turns({ allow: ["Write"] }, false))
      approved.push(await turns({ allow: [], ask: ["Write"] }, true))
      parks.push(await parkAndResume())
    }
    const allowedMs = median(allowed)
    const approvedMs = median(approved)
    return {
      method: `Medians of ${ROUNDS} rounds. ${fmtInt(TURNS)} turns over ${AGENTS} agents of the in-memory Claude ` +
        `(\`Testing.layer\`, TestContext), each turn one Write call then a reply. Baseline: the Write allowed by the ` +
        `policy ({ allow: ["Write"] }). Measured: the Write in \`ask\`, decided \`allow\` at once by a fiber ` +
        `subscribed to \`subscribeApprovals\`: the pending approval, its two report entries, the store's state, the ` +
        `stream and \`decide\`. Parking: 100 agents on one login, one turn hits a usage limit (1 h reset), then ` +
        `\`unpark()\` with no stagger.`,
      rows: [
        row(`${fmtInt(TURNS)} turns, Write allowed by policy (baseline)`, fmtMs(allowedMs, 1), "", "1.00×"),
        row(
          `${fmtInt(TURNS)} turns, Write approved by a subscriber`,
          fmtMs(approvedMs, 1),
          `${fmtMs(allowedMs, 1)} by policy`,
          fmtRatio(approvedMs, allowedMs)
        ),
        row(
          "per approval, added",
          fmtUs((approvedMs - allowedMs) / TURNS),
          `${fmtUs(allowedMs / TURNS)} per turn by policy`,
          fmtRatio(approvedMs, allowedMs)
        ),
        row("100 agents parked by one limit", fmtMs(median(parks.map((p) => p.parkedMs)), 1)),
        row("... and unparked, the hit turn answered", fmtMs(median(parks.map((p) => p.allMs)), 1))
      ],
      notes: []
    }
  })

if (isMain(import.meta.url)) await run()
