import { assert, it } from "@effect/vitest"
import { Effect } from "effect"
import { Flotta } from "../src/Flotta.js"
import { fakeFleet } from "./support.js"

it.scopedLive("smoke: spawn, ask, close", () =>
  Effect.gen(function*() {
    const fleet = yield* Flotta
    const info = yield* fleet.spawn("alpha")
    assert.strictEqual(info.status, "idle")
    const reply = yield* fleet.ask("alpha", "hello")
    assert.strictEqual(reply, "echo: hello")
    yield* fleet.close("alpha")
  }).pipe(Effect.provide(fakeFleet())))
