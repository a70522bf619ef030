/**
 * The Promise facade (`createFleet`, `Client.fromLayer`) over the in-memory Claude: the same operations as
 * Promises that reject with the typed error objects.
 */
import { afterEach, assert, describe, it } from "@effect/vitest"
import { fromLayer } from "../src/Client.js"
import type { ReportEntry } from "../src/ReportLog.js"
import { memoryFleet } from "./support.js"

const fleets: Array<ReturnType<typeof fromLayer>> = []
const newFleet = () => {
  const fleet = fromLayer(memoryFleet())
  fleets.push(fleet)
  return fleet
}
afterEach(async () => {
  await Promise.all(fleets.splice(0).map((f) => f.shutdown()))
})

/** A promise and the function that resolves it: a test waits on what a callback sees, never on a clock. */
const deferred = () => {
  let resolve: () => void = () => undefined
  const promise = new Promise<void>((r) => (resolve = r))
  return { promise, resolve }
}

describe("the Promise facade", () => {
  it("spawns, asks, prompts and reads results", async () => {
    const fleet = newFleet()
    const info = await fleet.spawn("promised")
    assert.strictEqual(info.name, "promised")
    assert.strictEqual(await fleet.ask("promised", "hello"), "echo: hello")
    const turnId = await fleet.prompt("promised", "later")
    assert.strictEqual((await fleet.wait("promised", turnId)).text, "echo: later")
    assert.strictEqual((await fleet.watch("promised", turnId)).text, "echo: later")
    assert.strictEqual((await fleet.result("promised")).turnId, turnId)
    assert.strictEqual((await fleet.transcript("promised")).length, 2)
    assert.deepStrictEqual((await fleet.list()).map((i) => i.name), ["promised"])
    assert.strictEqual((await fleet.run({ prompt: "once" })).text, "echo: once")
  })

  it("rejects with the typed error object itself", async () => {
    const fleet = newFleet()
    await fleet.spawn("one")
    const error = await fleet.ask("nobody", "hi").then(() => null, (e: unknown) => e)
    assert.strictEqual((error as { _tag: string })._tag, "AgentNotFound")
    assert.match((error as Error).message, /live agents: one/)
    const failed = await fleet.ask("one", "error 500").then(() => null, (e: unknown) => e)
    assert.strictEqual((failed as { _tag: string })._tag, "TurnFailed")
    assert.strictEqual((failed as { status: number }).status, 500)
  })

  it("subscribe delivers live entries until unsubscribed", async () => {
    const fleet = newFleet()
    await fleet.spawn("watched")
    const seen: Array<ReportEntry> = []
    const both = deferred()
    const unsubscribe = fleet.subscribe((entry) => {
      if (seen.push(entry) === 2) both.resolve()
    }, { agent: "watched" })
    await unsubscribe.ready
    await fleet.ask("watched", "one")
    await both.promise
    unsubscribe()
    await fleet.ask("watched", "two")
    assert.deepStrictEqual(seen.map((e) => e.kind), ["turn_started", "result"])
    const { entries, next } = await fleet.reports({ agent: "watched" })
    assert.deepStrictEqual(entries.map((e) => e.kind), ["spawned", "turn_started", "result", "turn_started", "result"])
    assert.isAbove(next, 0)
  })

  it("follow delivers one agent's entries; for a name that is not live, its ready rejects with AgentNotFound", async () => {
    const fleet = newFleet()
    await fleet.spawn("followed")
    await fleet.spawn("ignored")
    const seen: Array<ReportEntry> = []
    const both = deferred()
    const unfollow = fleet.follow("followed", (entry) => {
      if (seen.push(entry) === 2) both.resolve()
    })
    await unfollow.ready
    await fleet.ask("ignored", "zero")
    await fleet.ask("followed", "one")
    await both.promise
    unfollow()
    assert.deepStrictEqual(seen.map((e) => [e.agent, e.kind]), [["followed", "turn_started"], ["followed", "result"]])
    const error = await fleet.follow("nobody", () => undefined).ready.then(() => null, (e: unknown) => e)
    assert.strictEqual((error as { _tag?: string } | null)?._tag, "AgentNotFound")
    await fleet.shutdown()
  })

  it("shutdown closes every agent: a waiting caller gets AgentClosed", async () => {
    const fleet = newFleet()
    await Promise.all(["x", "y"].map((n) => fleet.spawn(n)))
    const turn = await fleet.prompt("x", "hang")
    const waiting = fleet.wait("x", turn).then(() => null, (e: unknown) => e)
    await fleet.shutdown()
    const error = await waiting
    assert.strictEqual((error as { _tag?: string } | null)?._tag, "AgentClosed")
  })
})
