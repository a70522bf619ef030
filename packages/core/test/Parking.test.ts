/**
 * Usage limits, with the in-memory Claude under TestClock: a limit parks every agent on the same credentials,
 * queued turns wait, agents resume at the reset (plus jitter) one by one, and the parked turn's answer is the
 * continuation's; by hand, interrupted, closed, backed off, warned about, and across a restart of the host.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Random, Scope, TestClock } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { childEnv, cliWaitsAtLimits } from "../src/ClaudeCli.js"
import * as Client from "../src/Client.js"
import { Flotta } from "../src/Flotta.js"
import * as Parking from "../src/Parking.js"
import * as SqliteStore from "../src/SqliteStore.js"
import * as Testing from "../src/Testing.js"
import { eventually, failureOf, withAgents } from "./support.js"

const ONE = { ANTHROPIC_API_KEY: "sk-secret-one" }
const TWO = { ANTHROPIC_API_KEY: "sk-secret-two" }
const HOUR = 3_600_000
const iso = (millis: number) => new Date(millis).toISOString()

/** `limit` hits the usage limit (reset in an hour), `warn` warns; a resumed prompt says so. */
const model: Testing.Model = ({ prompt, resumed }) => {
  if (resumed) return `resumed: ${prompt}`
  if (prompt === "limit") return Testing.usageLimit({ resetIn: "1 hour" })
  if (prompt.startsWith("warn")) return Testing.usageWarning(`warned: ${prompt}`)
  return `echo: ${prompt}`
}

/** How many more times a `busy` prompt is refused with a 429 (the backoff test's model). */
const refusals = { left: 2 }

const fleetLayer = (options: Testing.Options = {}) => Testing.layer({ model, parkJitter: 0, ...options })

/** Spawns `name` on the credentials `env`, sends it into a usage limit and waits until it is parked. */
const parkedAgent = (fleet: Flotta, name: string, env = ONE) =>
  Effect.gen(function*() {
    yield* fleet.spawn(name, { env })
    yield* fleet.prompt(name, "limit")
    return yield* eventually(fleet.status(name), (s) => s.status === "parked")
  })

const kinds = (fleet: Flotta, agent?: string) =>
  Effect.map(
    fleet.reports({ kinds: ["parked", "unparked", "usage_warning", "error"], ...(agent ? { agent } : {}) }),
    (page) => page.entries
  )

describe("parking at a usage limit", () => {
  it.effect("parks every agent on the same credentials; queued turns wait; all resume at the reset, staggered", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("a", { env: ONE })
      yield* fleet.spawn("b", { env: ONE })
      yield* fleet.spawn("c", { env: TWO })
      assert.strictEqual(yield* fleet.prompt("a", "limit"), "t1")
      const a = yield* eventually(fleet.status("a"), (s) => s.status === "parked")
      assert.strictEqual(a.parkedUntil, iso(HOUR))
      assert.strictEqual(a.current, "t1", "the turn that hit the limit is still the turn in flight")
      const b = yield* fleet.info("b")
      assert.strictEqual(b.status, "parked")
      assert.strictEqual(b.parkedUntil, iso(HOUR))
      // Other credentials are not parked.
      assert.strictEqual(yield* fleet.ask("c", "free"), "echo: free")
      assert.isNull((yield* fleet.status("c")).parkedUntil)

      // Queued turns wait; the parked turn's deadline (180 s) and the stall watchdog (10 min) never fire.
      assert.strictEqual(yield* fleet.prompt("a", "after"), "t2")
      assert.strictEqual(yield* fleet.prompt("b", "waiting"), "t1")
      yield* TestClock.adjust("59 minutes")
      assert.deepStrictEqual(
        [yield* fleet.status("a"), yield* fleet.status("b")].map((s) => [s.status, s.current, s.queued]),
        [["parked", "t1", 1], ["parked", null, 1]]
      )
      assert.deepStrictEqual((yield* fleet.transcript("a")).map((t) => t.status), ["running", "queued"])
      const [group] = yield* fleet.parking
      assert.deepStrictEqual(
        [group!.reason, group!.rateLimitType, group!.agents, group!.until],
        ["usage_limit", "five_hour", ["a", "b"], iso(HOUR)]
      )
      assert.match(group!.credentials, /^api key #[0-9a-f]{8}$/)
      assert.notInclude(JSON.stringify(yield* kinds(fleet)), "sk-secret", "a report shows a secret")

      // At the reset, the agent with the parked turn first: the continuation's answer is that turn's result.
      yield* TestClock.adjust("1 minute")
      assert.strictEqual((yield* fleet.wait("a", "t1")).text, "resumed: limit")
      assert.strictEqual((yield* fleet.wait("a", "t2")).text, "echo: after")
      assert.strictEqual((yield* fleet.status("b")).status, "parked", "b resumes a stagger later")
      yield* TestClock.adjust("2 seconds")
      assert.strictEqual((yield* fleet.wait("b", "t1")).text, "echo: waiting")
      assert.deepStrictEqual(yield* fleet.parking, [])

      const log = yield* kinds(fleet)
      assert.deepStrictEqual(log.map((e) => [e.agent, e.kind, e.turnId ?? null, e.at]), [
        ["a", "parked", "t1", iso(0)],
        ["b", "parked", null, iso(0)],
        ["a", "unparked", null, iso(HOUR)],
        ["b", "unparked", null, iso(HOUR + 2000)]
      ])
      assert.deepStrictEqual(log[0]!.data, {
        until: iso(HOUR),
        reason: "usage_limit",
        rateLimitType: "five_hour",
        credentials: group!.credentials,
        message: `You've hit your 5-hour limit · resets ${iso(HOUR)}`
      })
      assert.deepStrictEqual(log[2]!.data, { by: "reset", credentials: group!.credentials })
    }).pipe(Effect.provide(fleetLayer())))

  it.effect("agents resume at the reset plus at most the jitter, drawn from Random", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const until = Date.parse((yield* parkedAgent(fleet, "a")).parkedUntil!)
      assert.strictEqual(until, HOUR + 12_345)
      yield* TestClock.adjust(until - 1)
      assert.strictEqual((yield* fleet.status("a")).status, "parked")
      yield* TestClock.adjust(1)
      assert.strictEqual((yield* fleet.wait("a", "t1")).text, "resumed: limit")
    }).pipe(
      // Random is the fleet's: a fixed one draws the same jitter every time.
      Effect.provide(
        fleetLayer({ parkJitter: "30 seconds" }).pipe(Layer.provide(Layer.setRandom(Random.fixed([12_345]))))
      )
    ))

  it.effect("unpark by hand: one agent, then the rest; an unknown agent is AgentNotFound", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents(["a", "b"], { env: ONE })
      assert.deepStrictEqual(yield* fleet.unpark(), { unparked: [] })
      yield* fleet.prompt("a", "limit")
      yield* eventually(fleet.status("a"), (s) => s.status === "parked")
      yield* fleet.prompt("b", "waiting")
      assert.deepStrictEqual(yield* fleet.unpark({ agent: "b" }), { unparked: ["b"] })
      assert.strictEqual((yield* fleet.wait("b", "t1")).text, "echo: waiting")
      assert.strictEqual((yield* fleet.status("a")).status, "parked", "the rest of the group stays parked")
      assert.deepStrictEqual((yield* fleet.parking)[0]!.agents, ["a"])
      assert.deepStrictEqual(yield* fleet.unpark({ agent: "b" }), { unparked: [] })
      assert.deepStrictEqual(yield* fleet.unpark(), { unparked: ["a"] })
      assert.strictEqual((yield* fleet.wait("a", "t1")).text, "resumed: limit")
      assert.deepStrictEqual(
        (yield* kinds(fleet)).filter((e) => e.kind === "unparked").map((e) => [e.agent, (e.data as { by: string }).by]),
        [["b", "manual"], ["a", "manual"]]
      )
      assert.strictEqual(failureOf(yield* Effect.exit(fleet.unpark({ agent: "nobody" })))._tag, "AgentNotFound")
    }).pipe(Effect.provide(fleetLayer())))

  it.effect("a parked turn interrupted fails TurnInterrupted; the agent stays parked until the reset", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* parkedAgent(fleet, "x")
      assert.isTrue(yield* fleet.interrupt("x"))
      assert.strictEqual(failureOf(yield* Effect.exit(fleet.wait("x", "t1")))._tag, "TurnInterrupted")
      const x = yield* fleet.status("x")
      assert.deepStrictEqual([x.status, x.current, x.parkedUntil], ["parked", null, iso(HOUR)])
      assert.isFalse(yield* fleet.interrupt("x"), "nothing in flight any more")
      yield* fleet.prompt("x", "again")
      assert.strictEqual((yield* fleet.status("x")).queued, 1)
      yield* TestClock.adjust("1 hour")
      assert.strictEqual((yield* fleet.wait("x", "t2")).text, "echo: again")
    }).pipe(Effect.provide(fleetLayer())))

  it.effect("close while parked fails the parked turn and the queued one with AgentClosed", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents(["y", "z"], { env: TWO })
      const hit = yield* Effect.fork(
        Effect.exit(Effect.flatMap(fleet.prompt("y", "limit"), (id) => fleet.wait("y", id)))
      )
      const queued = yield* Effect.fork(
        Effect.exit(Effect.flatMap(fleet.prompt("y", "queued"), (id) => fleet.wait("y", id)))
      )
      yield* eventually(fleet.status("y"), (s) => s.status === "parked")
      yield* fleet.close("y")
      assert.strictEqual(failureOf(yield* Effect.fromFiber(hit))._tag, "AgentClosed")
      assert.strictEqual(failureOf(yield* Effect.fromFiber(queued))._tag, "AgentClosed")
      assert.deepStrictEqual((yield* fleet.parking).map((g) => g.agents), [["z"]], "z stays parked")
    }).pipe(Effect.provide(fleetLayer())))

  it.effect("a 429 with no reset time backs off: 1 min, then 2 min in a row, and 1 min again after a success", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("k", { env: ONE })
      yield* fleet.prompt("k", "busy")
      const first = yield* eventually(fleet.status("k"), (s) => s.status === "parked")
      assert.strictEqual(first.parkedUntil, iso(60_000))
      yield* TestClock.adjust("1 minute")
      // Refused again at the end of the backoff: twice as long.
      const second = yield* eventually(fleet.status("k"), (s) => s.parkedUntil === iso(60_000 + 120_000))
      assert.strictEqual(second.status, "parked")
      yield* TestClock.adjust("2 minutes")
      assert.strictEqual((yield* fleet.wait("k", "t1")).text, "resumed: busy")
      // A success starts the backoff over.
      refusals.left = 1
      yield* fleet.prompt("k", "busy")
      const third = yield* eventually(fleet.status("k"), (s) => s.status === "parked")
      assert.strictEqual(third.parkedUntil, iso(180_000 + 60_000))
      const reasons = (yield* kinds(fleet, "k")).filter((e) => e.kind === "parked").map((e) =>
        (e.data as { reason: string }).reason
      )
      assert.deepStrictEqual(reasons, ["rate_limited", "rate_limited", "rate_limited"])
    }).pipe(Effect.provide(fleetLayer({
      model: ({ prompt, resumed }) =>
        prompt === "busy" && refusals.left-- > 0
          ? Testing.rateLimited()
          : resumed
          ? `resumed: ${prompt}`
          : `echo: ${prompt}`
    }))))

  it.effect("a throttle (not the usage limit) backs off the same way; a usage limit with no reset time too", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("t", { env: ONE })
      yield* fleet.spawn("u", { env: TWO })
      yield* fleet.prompt("t", "throttle")
      yield* fleet.prompt("u", "no reset")
      const t = yield* eventually(fleet.status("t"), (s) => s.status === "parked")
      const u = yield* eventually(fleet.status("u"), (s) => s.status === "parked")
      assert.deepStrictEqual([t.parkedUntil, u.parkedUntil], [iso(60_000), iso(60_000)])
      const groups = yield* fleet.parking
      assert.deepStrictEqual(groups.map((g) => [g.agents[0], g.reason]).sort(), [
        ["t", "rate_limited"],
        ["u", "usage_limit"]
      ])
      yield* TestClock.adjust("1 minute")
      assert.strictEqual((yield* fleet.wait("t", "t1")).text, "resumed: throttle")
      assert.strictEqual((yield* fleet.wait("u", "t1")).text, "resumed: no reset")
    }).pipe(Effect.provide(fleetLayer({
      model: ({ prompt, resumed }) =>
        resumed
          ? `resumed: ${prompt}`
          : prompt === "throttle"
          ? Testing.rateLimited({ throttle: true })
          : Testing.usageLimit({ resetIn: null })
    }))))

  it.effect("allowed_warning is reported once per window as usage_warning; nothing parks", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("w", { env: ONE })
      assert.strictEqual(yield* fleet.ask("w", "warn one"), "warned: warn one")
      assert.strictEqual(yield* fleet.ask("w", "warn two"), "warned: warn two")
      const warnings = (yield* kinds(fleet)).filter((e) => e.kind === "usage_warning")
      assert.strictEqual(warnings.length, 1)
      assert.deepStrictEqual(warnings[0]!.data, {
        credentials: Parking.credentialsOf(childEnv(ONE)).label,
        rateLimitType: "five_hour",
        resetsAt: iso(4 * HOUR),
        utilization: 0.92,
        surpassedThreshold: 0.9
      })
      assert.strictEqual((yield* fleet.status("w")).status, "idle")
    }).pipe(Effect.provide(fleetLayer())))

  it.effect("an agent whose CLI waits itself (CLAUDE_CODE_RETRY_WATCHDOG=1) is never parked: its limit fails", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("self", { env: { ...ONE, CLAUDE_CODE_RETRY_WATCHDOG: "1" } })
      yield* fleet.spawn("mate", { env: ONE })
      const error = failureOf(yield* Effect.exit(fleet.ask("self", "limit")))
      assert.strictEqual(error._tag, "TurnFailed")
      assert.include(error.message, "You've hit your 5-hour limit")
      assert.strictEqual((yield* fleet.status("self")).status, "idle")
      // The limit is its credentials' all the same: the others park.
      assert.strictEqual((yield* fleet.status("mate")).status, "parked")
      assert.strictEqual(yield* fleet.ask("self", "still"), "echo: still")
    }).pipe(Effect.provide(fleetLayer())))

  it.effect("a restart of the host while parked stays parked until the stored reset", () =>
    Effect.gen(function*() {
      const where = {
        disk: Testing.disk(),
        file: path.join(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-parking-")), "state.db")
      }
      const host = <A, E>(body: (fleet: Flotta) => Effect.Effect<A, E>) =>
        Effect.gen(function*() {
          const scope = yield* Scope.make()
          const context = yield* Layer.buildWithScope(
            fleetLayer({ disk: where.disk, store: SqliteStore.layer(where.file) }),
            scope
          ).pipe(Effect.orDie)
          const exit = yield* Effect.exit(body(Context.get(context, Flotta)))
          yield* Scope.close(scope, Exit.void)
          return yield* exit
        })
      yield* host((fleet) =>
        Effect.gen(function*() {
          yield* fleet.spawn("a", { env: ONE })
          yield* fleet.prompt("a", "limit")
          yield* fleet.prompt("a", "after the reset")
          yield* eventually(fleet.status("a"), (s) => s.status === "parked")
        })
      )
      yield* TestClock.adjust("10 minutes")
      yield* host((fleet) =>
        Effect.gen(function*() {
          const a = yield* eventually(fleet.status("a"), (s) => s.status === "parked")
          assert.deepStrictEqual([a.parkedUntil, a.queued], [iso(HOUR), 1])
          // The turn that was in flight ends as HostRestarted, as any turn in flight at a restart does.
          assert.strictEqual(failureOf(yield* Effect.exit(fleet.result("a", "t1")))._tag, "HostRestarted")
          yield* TestClock.adjust("50 minutes")
          assert.strictEqual((yield* fleet.wait("a", "t2")).text, "echo: after the reset")
        })
      )
    }))
})

describe("which side waits at a usage limit", () => {
  it("every child gets CLAUDE_CODE_RETRY_WATCHDOG=0, unless the agent's own env asks for 1", () => {
    const before = process.env["CLAUDE_CODE_RETRY_WATCHDOG"]
    process.env["CLAUDE_CODE_RETRY_WATCHDOG"] = "1"
    try {
      assert.strictEqual(childEnv({})["CLAUDE_CODE_RETRY_WATCHDOG"], "0", "the host's own value is not the agent's")
      assert.strictEqual(childEnv({ CLAUDE_CODE_RETRY_WATCHDOG: "0" })["CLAUDE_CODE_RETRY_WATCHDOG"], "0")
      assert.strictEqual(childEnv({ CLAUDE_CODE_RETRY_WATCHDOG: "1" })["CLAUDE_CODE_RETRY_WATCHDOG"], "1")
      assert.isFalse(cliWaitsAtLimits({ CLAUDE_CODE_RETRY_WATCHDOG: "true" }))
    } finally {
      if (before === undefined) delete process.env["CLAUDE_CODE_RETRY_WATCHDOG"]
      else process.env["CLAUDE_CODE_RETRY_WATCHDOG"] = before
    }
  })

  it("credentials: the same login and endpoint group together, a label never shows the secret", () => {
    const a = Parking.credentialsOf({ ANTHROPIC_API_KEY: "sk-1", ANTHROPIC_BASE_URL: "http://u:p@127.0.0.1:9/x" })
    const b = Parking.credentialsOf({ ANTHROPIC_API_KEY: "sk-1", ANTHROPIC_BASE_URL: "http://u:p@127.0.0.1:9/x" })
    const c = Parking.credentialsOf({ ANTHROPIC_API_KEY: "sk-1", ANTHROPIC_BASE_URL: "http://127.0.0.1:10" })
    const d = Parking.credentialsOf({ CLAUDE_CODE_OAUTH_TOKEN: "sekret-9", CLAUDE_CONFIG_DIR: "/h/.claude" })
    assert.strictEqual(a.key, b.key)
    assert.notStrictEqual(a.key, c.key)
    assert.match(a.label, /^api key #[0-9a-f]{8} at 127\.0\.0\.1:9$/)
    assert.match(d.label, /^oauth token #[0-9a-f]{8}$/)
    for (const label of [a.label, d.label]) assert.notMatch(label, /sk-1|sekret|u:p/)
  })
})

describe("the Promise facade", () => {
  it.live("unpark and parking", () =>
    Effect.promise(async () => {
      const fleet = Client.fromLayer(fleetLayer())
      try {
        await fleet.spawn("a", { env: ONE })
        // Told by the report log when it parks: no polling.
        let parked!: () => void
        const isParked = new Promise<void>((resolve) => (parked = resolve))
        const unsubscribe = fleet.subscribe((entry) => {
          if (entry.kind === "parked") parked()
        })
        await unsubscribe.ready
        const turnId = await fleet.prompt("a", "limit")
        await isParked
        unsubscribe()
        const [group] = await fleet.parking()
        assert.deepStrictEqual(group!.agents, ["a"])
        assert.deepStrictEqual(await fleet.unpark({ agent: "a" }), { unparked: ["a"] })
        assert.strictEqual((await fleet.wait("a", turnId)).text, "resumed: limit")
        assert.deepStrictEqual(await fleet.parking(), [])
      } finally {
        await fleet.shutdown()
      }
    }))
})
