/**
 * Notifications to a real HTTP receiver on 127.0.0.1, over the in-memory fleet: each chosen event arrives,
 * signed; a receiver that is down gets everything once it is up, once each and in order per agent; a restart of
 * the host in between loses nothing; a receiver that refuses outright makes dead letters, and the target goes on.
 */
import { assert, describe, it } from "@effect/vitest"
import { Flotta } from "@flotta/core/Flotta"
import { ReportLog } from "@flotta/core/ReportLog"
import type { ReportEntry } from "@flotta/core/ReportLog"
import * as Store from "@flotta/core/Store"
import * as Testing from "@flotta/core/Testing"
import * as Delivery from "@flotta/webhooks/Delivery"
import * as Notifier from "@flotta/webhooks/Notifier"
import * as Webhooks from "@flotta/webhooks/Webhooks"
import type { NotifyTarget } from "@flotta/webhooks/WebhooksConfig"
import { Effect, Layer, Schedule } from "effect"
import { createHmac } from "node:crypto"
import { waitFor } from "./support/waiting.js"
import { receiver } from "./support/webhookReceiver.js"

const SECRET = "notify-secret-0123456789"
const fast = { retry: Schedule.spaced("20 millis") }

const fleetWith = (targets: ReadonlyArray<NotifyTarget>, store: Layer.Layer<Store.Store> = Store.Store.memory) =>
  Webhooks.layer({ notify: targets, dashboardUrl: "http://127.0.0.1:4099/" }, fast).pipe(
    Layer.provideMerge(Testing.layer({ model: ({ prompt }) => `echo: ${prompt}`, store }))
  )

/** Waits until the receiver has seen what `done` asks for. */
const until = (done: () => boolean, what: string) => waitFor(Effect.sync(done), (ok) => ok, what)

const entryOf = (body: string) => JSON.parse(body) as ReportEntry & { link?: string }

describe("notifications", () => {
  it.live("each chosen event reaches a real receiver, signed, with its delivery id and a link", () =>
    Effect.gen(function*() {
      const hook = yield* receiver
      yield* Effect.gen(function*() {
        const fleet = yield* Flotta
        yield* fleet.spawn("scout", {})
        yield* fleet.ask("scout", "hello")
        yield* fleet.close("scout")
        yield* until(() => hook.taken().length >= 1, "the closed event")
        const [got] = hook.taken()
        const entry = entryOf(got!.body)
        assert.strictEqual(entry.kind, "closed")
        assert.strictEqual(entry.agent, "scout")
        assert.strictEqual(entry.link, "http://127.0.0.1:4099/agents/scout")
        const expected = `sha256=${createHmac("sha256", SECRET).update(got!.body).digest("hex")}`
        assert.strictEqual(got!.headers["x-flotta-signature"], expected)
        const [target] = (yield* Notifier.Notifier).targets
        assert.strictEqual(got!.headers["x-flotta-delivery"], Delivery.deliveryId(target!, entry))
        // Only what the target asked for: the spawn and the turn were not sent.
        assert.strictEqual(hook.received.length, 1)
        const [status] = yield* (yield* Notifier.Notifier).status
        assert.strictEqual(status!.delivered, 1)
        assert.strictEqual(status!.url, new URL(hook.url).origin + "/…")
      }).pipe(Effect.provide(fleetWith([{ url: hook.url, events: ["agent_closed"], secret: SECRET }])))
    }).pipe(Effect.scoped))

  it.live("a receiver down for a while gets everything once it is up: once each, in order per agent", () =>
    Effect.gen(function*() {
      const hook = yield* receiver
      hook.answer(503)
      yield* Effect.gen(function*() {
        const fleet = yield* Flotta
        const log = yield* ReportLog
        for (const name of ["a", "b"]) yield* fleet.spawn(name, {})
        yield* Effect.all([fleet.ask("a", "one"), fleet.ask("b", "two")], { concurrency: 2 })
        yield* fleet.ask("a", "three")
        for (const name of ["a", "b"]) yield* fleet.close(name)
        yield* until(() => hook.received.length >= 3, "several failed tries")
        const failing = yield* log.reports({ kinds: ["notify_failing"] })
        assert.strictEqual(failing.entries.length, 1, "one notify_failing for the outage")
        hook.answer(200)
        const sent = (yield* log.reports({ limit: 1000 })).entries.filter((e) => e.agent === "a" || e.agent === "b")
        yield* until(() => hook.taken().length >= sent.length, "every entry taken")
        const taken = hook.taken().map((r) => entryOf(r.body))
        assert.deepStrictEqual(taken.map((e) => e.seq), sent.map((e) => e.seq), "each once, in the log's order")
        const ids = hook.taken().map((r) => r.headers["x-flotta-delivery"])
        assert.strictEqual(new Set(ids).size, ids.length)
        const recovered = yield* log.reports({ kinds: ["notify_recovered"] })
        assert.strictEqual(recovered.entries.length, 1)
      }).pipe(Effect.provide(fleetWith([{ url: hook.url, events: ["*"] }])))
    }).pipe(Effect.scoped))

  it.live("a host restart while the receiver is down loses nothing", () =>
    Effect.gen(function*() {
      const hook = yield* receiver
      hook.answer(503)
      const store = Layer.succeed(Store.Store, Store.makeMemory())
      const target: NotifyTarget = { url: hook.url, events: ["agent_closed"], secret: SECRET }
      const closed = yield* Effect.gen(function*() {
        const fleet = yield* Flotta
        for (const name of ["a", "b", "c"]) yield* fleet.spawn(name, {})
        for (const name of ["a", "b", "c"]) yield* fleet.close(name)
        yield* until(() => hook.received.length >= 1, "a failed try")
        return (yield* (yield* ReportLog).reports({ kinds: ["closed"] })).entries.map((e) => e.seq)
      }).pipe(Effect.provide(fleetWith([target], store)), Effect.scoped)
      assert.strictEqual(hook.taken().length, 0)
      hook.answer(200)
      // The host comes back with the same store: the target resumes from its cursor. Delivery is at least once: a
      // try the first host had in flight as it stopped may still be answered (this receiver shares the test's event
      // loop), and then the event comes again under the same delivery id, which a receiver drops a repeat by.
      yield* Effect.gen(function*() {
        const distinct = () => [...new Map(hook.taken().map((r) => [r.headers["x-flotta-delivery"], r])).values()]
        yield* until(() => distinct().length >= 3, "the three closed events after the restart")
        assert.deepStrictEqual(distinct().map((r) => entryOf(r.body).seq), closed)
        assert.isAtMost(hook.taken().length, 4, "at most the one in flight comes twice")
        const [status] = yield* (yield* Notifier.Notifier).status
        assert.strictEqual(status!.delivered, 3)
        assert.strictEqual(status!.failing, null)
      }).pipe(Effect.provide(fleetWith([target], store)), Effect.scoped)
    }).pipe(Effect.scoped))

  it.live("a receiver that refuses outright makes a dead letter, reported, and the next event still goes", () =>
    Effect.gen(function*() {
      const hook = yield* receiver
      hook.answer(400)
      yield* Effect.gen(function*() {
        const fleet = yield* Flotta
        const log = yield* ReportLog
        yield* fleet.spawn("a", {})
        yield* fleet.close("a")
        yield* until(() => hook.received.length >= 1, "the refused try")
        const notifier = yield* Notifier.Notifier
        yield* waitFor(notifier.status, ([s]) => s!.deadCount === 1, "a dead letter")
        const dead = yield* log.reports({ kinds: ["notify_dead"] })
        assert.strictEqual(dead.entries.length, 1)
        assert.include(JSON.stringify(dead.entries[0]!.data), "it answered 400")
        hook.answer(200)
        yield* fleet.spawn("b", {})
        yield* fleet.close("b")
        yield* until(() => hook.taken().length >= 1, "the next event")
        assert.strictEqual(entryOf(hook.taken()[0]!.body).agent, "b")
        assert.strictEqual(hook.received.length, 2, "a refused event is not tried again")
      }).pipe(Effect.provide(fleetWith([{ url: hook.url, events: ["agent_closed"] }])))
    }).pipe(Effect.scoped))

  it.live("an event undelivered a day after it happened is a dead letter", () =>
    Effect.gen(function*() {
      const hook = yield* receiver
      hook.answer(503)
      const layer = Webhooks.layer({ notify: [{ url: hook.url, events: ["agent_closed"] }] }, {
        ...fast,
        deadAfter: "300 millis"
      }).pipe(Layer.provideMerge(Testing.layer({})))
      yield* Effect.gen(function*() {
        const fleet = yield* Flotta
        yield* fleet.spawn("a", {})
        yield* fleet.close("a")
        const notifier = yield* Notifier.Notifier
        yield* waitFor(notifier.status, ([s]) => s!.deadCount === 1, "a dead letter")
        const [status] = yield* notifier.status
        assert.strictEqual(status!.dead[0]!.kind, "closed")
        assert.isAbove(hook.received.length, 1, "it was tried until it was a day old")
      }).pipe(Effect.provide(layer))
    }).pipe(Effect.scoped))

  it.live("an approval waiting for a human is sent with its tool, its input and the page to decide it on", () =>
    Effect.gen(function*() {
      const hook = yield* receiver
      yield* Effect.gen(function*() {
        const fleet = yield* Flotta
        yield* fleet.spawn("fixer", { permission: "ask" })
        const turn = yield* fleet.prompt("fixer", "clean")
        yield* until(() => hook.taken().length >= 1, "the approval")
        const entry = entryOf(hook.taken()[0]!.body)
        assert.strictEqual(entry.kind, "approval_requested")
        assert.deepStrictEqual(
          [(entry.data as { tool: string }).tool, (entry.data as { input: unknown }).input],
          ["Bash", { command: "rm -rf build" }]
        )
        assert.strictEqual(entry.link, "http://127.0.0.1:4099/approvals")
        const [pending] = yield* fleet.approvals()
        yield* fleet.decide(pending!.id, { behavior: "deny", message: "not today" })
        yield* fleet.wait("fixer", turn)
      }).pipe(Effect.provide(
        Webhooks.layer({
          notify: [{ url: hook.url, events: ["approval_requested"] }],
          dashboardUrl: "http://127.0.0.1:4099/"
        }, fast).pipe(Layer.provideMerge(Testing.layer({
          model: () => Testing.toolUse("Bash", { command: "rm -rf build" })
        })))
      ))
    }).pipe(Effect.scoped))
})
