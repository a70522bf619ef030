/**
 * The in-memory Claude (`@flotta/core/Testing`) under TestClock, as a user's test suite drives it: 1,000 agents
 * spawned and asked, and a week of scheduler time. Baselines from the same run: 1,000 bare fibers that each wait
 * for one message and answer it (the least an agent could be), and a week of TestClock with one fiber that wakes
 * as often as the scheduler does (what TestClock itself costs per step).
 *   npx tsx bench/testing.ts        (BENCH_AGENTS=1000, BENCH_ROUNDS=3)
 */
import { Deferred, Effect, Fiber, Layer, Queue, TestClock, TestContext } from "effect"
import { Flotta } from "../packages/core/src/Flotta.js"
import * as Testing from "../packages/core/src/Testing.js"
import { Scheduler } from "../packages/scheduler/src/Scheduler.js"
import * as SchedulerConfig from "../packages/scheduler/src/SchedulerConfig.js"
import { fmtInt, fmtMs, fmtRatio, isMain, main, median, row, targetRow } from "./lib.js"

const AGENTS = Number(process.env["BENCH_AGENTS"] ?? 1000)
const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 3)
const names = Array.from({ length: AGENTS }, (_, i) => `agent-${i}`)

const timed = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const started = performance.now()
      yield* effect
      return performance.now() - started
    }).pipe(Effect.provide(TestContext.TestContext))
  )

/** 1,000 agents over the in-memory Claude: spawn all, ask each (TestClock is the clock). */
const fleetAgents = timed(
  Effect.gen(function*() {
    const fleet = yield* Flotta
    yield* Effect.forEach(names, (name) => fleet.spawn(name), { concurrency: "unbounded", discard: true })
    const replies = yield* Effect.forEach(names, (name) => fleet.ask(name, name), { concurrency: "unbounded" })
    if (replies[AGENTS - 1] !== `echo: ${names[AGENTS - 1]}`) throw new Error(`bad reply: ${replies[AGENTS - 1]}`)
  }).pipe(Effect.provide(Testing.layer()))
)

/** The floor: a fiber per "agent" waiting for one message on its queue and answering it through a Deferred. */
const bareFibers = timed(
  Effect.gen(function*() {
    const actors = yield* Effect.forEach(names, () =>
      Effect.gen(function*() {
        const inbox = yield* Queue.unbounded<{ text: string; reply: Deferred.Deferred<string> }>()
        const fiber = yield* Effect.fork(
          Effect.flatMap(Queue.take(inbox), (m) => Deferred.succeed(m.reply, `echo: ${m.text}`))
        )
        return { inbox, fiber }
      }))
    yield* Effect.forEach(actors, ({ inbox }, i) =>
      Effect.gen(function*() {
        const reply = yield* Deferred.make<string>()
        yield* Queue.offer(inbox, { text: names[i]!, reply })
        return yield* Deferred.await(reply)
      }), { concurrency: "unbounded" })
    yield* Effect.forEach(actors, ({ fiber }) => Fiber.await(fiber), { discard: true })
  })
)

const WEEKDAYS = ["mon", "tue", "wed", "thu", "fri"]

/** A week of working hours: an hourly prompt routine and a daily scan, over the in-memory Claude. */
const schedulerWeek = Effect.gen(function*() {
  const config = yield* SchedulerConfig.required({
    schedule: {
      timezone: "America/Los_Angeles",
      hours: Object.fromEntries(WEEKDAYS.map((d) => [d, [["09:00", "17:00"]]])),
      tickMs: 86_400_000
    },
    routines: [
      { name: "hourly", action: "prompt", agent: "aide", prompt: "anything new?", every: { intervalMs: 3_600_000 } },
      { name: "standup", action: "scan", every: { dailyAt: "09:00" } }
    ]
  }).pipe(Effect.orDie)
  let turns = 0
  const ms = yield* Effect.promise(() =>
    timed(
      Effect.gen(function*() {
        yield* TestClock.setTime(Date.parse("2026-03-04T08:00:00Z"))
        yield* Effect.gen(function*() {
          const fleet = yield* Flotta
          yield* fleet.spawn("aide")
          yield* TestClock.adjust("7 days")
          turns = (yield* fleet.transcript("aide")).length
        }).pipe(
          Effect.provide(
            Scheduler.layer(config).pipe(Layer.provideMerge(Testing.layer({
              model: ({ prompt }) =>
                prompt.startsWith("Scan") ? Testing.structured({ tasks: [{ title: "Triage", detail: "x" }] }) : "ok"
            })))
          )
        )
      })
    )
  )
  return { ms, turns }
})

/** The floor: one fiber that sleeps an hour at a time through the same week, as many wakes as the scheduler's. */
const clockWeek = (wakes: number) =>
  timed(
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(Effect.forEach(Array.from({ length: wakes }), () => Effect.sleep("1 hour")))
      yield* TestClock.adjust(`${wakes} hours`)
      yield* Fiber.join(fiber)
    })
  )

export const run = () =>
  main("testing", "In-memory Claude under TestClock (@flotta/core/Testing)", async () => {
    const spawnAsk: Array<number> = []
    const bare: Array<number> = []
    const week: Array<number> = []
    const clock: Array<number> = []
    let turns = 0
    for (let r = 0; r < ROUNDS; r++) {
      bare.push(await bareFibers)
      spawnAsk.push(await fleetAgents)
      const w = await Effect.runPromise(schedulerWeek)
      week.push(w.ms)
      turns = w.turns
      clock.push(await clockWeek(7 * 24))
    }
    const agentsMs = median(spawnAsk)
    const bareMs = median(bare)
    const weekMs = median(week)
    const clockMs = median(clock)
    return {
      method: `Medians of ${ROUNDS} rounds in one process. ${fmtInt(AGENTS)} agents: \`Testing.layer()\` under ` +
        `\`TestContext\`, every agent spawned at once, then each asked once (TestClock is the only clock). Baseline: ` +
        `${fmtInt(AGENTS)} fibers, each waiting on its own queue for one message and answering through a Deferred. ` +
        `Week: the scheduler (Los Angeles, weekday hours 09:00-17:00, an hourly \`prompt\` routine and a 09:00 scan, ` +
        `\`tickMs\` one day) over \`Testing.layer\`, \`TestClock.adjust("7 days")\`; baseline: one fiber sleeping an ` +
        `hour at a time through the same week (168 TestClock steps).`,
      rows: [
        row(`${fmtInt(AGENTS)} bare fibers, a message each (baseline)`, fmtMs(bareMs, 1), "", "1.00×"),
        row(
          `${fmtInt(AGENTS)} agents spawned and asked`,
          fmtMs(agentsMs, 1),
          `${fmtMs(bareMs, 1)} bare`,
          fmtRatio(agentsMs, bareMs)
        ),
        row("per agent", fmtMs(agentsMs / AGENTS), `${fmtMs(bareMs / AGENTS)} bare`, fmtRatio(agentsMs, bareMs)),
        row("a week of TestClock, 168 wakes (baseline)", fmtMs(clockMs, 1), "", "1.00×"),
        targetRow(
          `a week of scheduler time (${turns} turns, 5 scans)`,
          fmtMs(weekMs, 1),
          `${fmtMs(clockMs, 1)} TestClock alone`,
          fmtRatio(weekMs, clockMs),
          "< 1 s",
          weekMs < 1000
        )
      ],
      notes: [
        `A TestClock step costs real time of its own (it lets other fibers run between steps): the week's baseline ` +
        `is that cost for as many wakes as the scheduler has.`
      ]
    }
  })

if (isMain(import.meta.url)) await run()
