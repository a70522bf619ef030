/**
 * The unit ring's real-time sleep guard (test/support/sleepGuard.ts), tried on timers of its own: a sleep that
 * fires is caught with its delay and where it was scheduled; a timer cleared in time, or of 0 ms, is not.
 * (Here in the integration ring, since proving it takes timers that really fire.)
 */
import { Effect } from "effect"
import * as timers from "node:timers"
import * as timersPromises from "node:timers/promises"
import { promisify } from "node:util"
import { describe, expect, it } from "vitest"
import * as SleepGuard from "./support/sleepGuard.js"

/** A fresh guard over copies of Node's timers (the real globals stay as they are). */
const guarded = () => {
  const guard = SleepGuard.make()
  const target = { setTimeout: timers.setTimeout, setInterval: timers.setInterval }
  const promises = { setTimeout: timersPromises.setTimeout }
  guard.install(target)
  guard.installPromises(promises)
  return { guard, target, promises }
}

const fired = (setTimeout: (callback: () => void, delay: number) => unknown, delay: number) =>
  new Promise<void>((resolve) => setTimeout(resolve, delay))

describe("the sleep guard", () => {
  it("catches a setTimeout that fires, naming its delay and this file", async () => {
    const { guard, target } = guarded()
    await fired(target.setTimeout, 5)
    const firings = guard.take()
    expect(firings).toHaveLength(1)
    expect(firings[0]).toMatchObject({ api: "setTimeout", delay: 5 })
    expect(firings[0]!.stack).toContain("sleep-guard.test.ts")
    const message = SleepGuard.message(firings, "during this test")
    expect(message).toMatch(/never sleeps in real time: 1 timer\(s\) of 1 ms or more fired during this test/)
    expect(message).toContain("setTimeout(…, 5) fired, scheduled at")
    expect(guard.take()).toEqual([])
  })

  it("catches a setInterval, once however often it fires", async () => {
    const { guard, target } = guarded()
    await new Promise<void>((resolve) => {
      let ticks = 0
      const interval = target.setInterval(() => {
        if (++ticks === 3) {
          clearInterval(interval)
          resolve()
        }
      }, 2)
    })
    expect(guard.take()).toMatchObject([{ api: "setInterval", delay: 2 }])
  })

  it("catches node:timers/promises and util.promisify(setTimeout)", async () => {
    const { guard, target, promises } = guarded()
    expect(await promises.setTimeout(3, "value")).toBe("value")
    await promisify(target.setTimeout)(4)
    expect(guard.take()).toMatchObject([
      { api: "timers/promises.setTimeout", delay: 3 },
      { api: "timers/promises.setTimeout", delay: 4 }
    ])
  })

  it("catches Effect.sleep on the live Clock, naming the fiber", async () => {
    const { guard, target } = guarded()
    const saved = globalThis.setTimeout
    globalThis.setTimeout = target.setTimeout
    try {
      await Effect.runPromise(Effect.sleep("3 millis"))
    } finally {
      globalThis.setTimeout = saved
    }
    const firings = guard.take()
    expect(firings).toMatchObject([{ api: "setTimeout", delay: 3 }])
    expect(firings[0]!.stack).toMatch(/in Effect fiber #\d+\n.*on the live Clock/)
  })

  it("tells a sleep from a library's housekeeping by who scheduled the timer", () => {
    const stack = (...frames: Array<string>) =>
      ["Error", "    at scheduledAt (/r/test/support/sleepGuard.ts:60:17)", ...frames.map((f) => `    at ${f}`)].join(
        "\n"
      )
    expect(SleepGuard.scheduler(stack("poll (/r/packages/cluster/test/support.ts:12:5)"))).toBe("code")
    expect(
      SleepGuard.scheduler(
        stack(
          "unsafeSchedule (/r/node_modules/effect/src/internal/clock.ts:30:20)",
          "x (/r/node_modules/@effect/vitest/dist/index.js:1:1)"
        )
      )
    ).toBe("clock")
    expect(
      SleepGuard.scheduler(stack("unsafeSchedule (file:///r/node_modules/effect/dist/esm/internal/clock.js:30:20)"))
    ).toBe("clock")
    expect(
      SleepGuard.scheduler(
        stack(
          "refreshTimeout (/r/node_modules/undici/lib/util/timers.js:201:22)",
          "evaluate (/r/packages/mcp/src/McpHandler.ts:1:1)"
        )
      )
    ).toBe("library")
    expect(SleepGuard.scheduler(stack("Server.setupConnectionsTracking (node:_http_server:514:5)"))).toBe("library")
  })

  it("lets be what is no sleep: a timer cleared before it fires, a 0 ms timer, an aborted sleep", async () => {
    const { guard, target, promises } = guarded()
    clearTimeout(target.setTimeout(() => expect.unreachable("cleared"), 1))
    await fired(target.setTimeout, 0)
    await fired((callback) => target.setTimeout(callback), 0)
    const abort = new AbortController()
    const aborted = promises.setTimeout(1_000, undefined, { signal: abort.signal })
    abort.abort()
    await expect(aborted).rejects.toThrow(/abort/i)
    // Effect.timeout on the live Clock arms a timer and clears it when the effect wins.
    const saved = globalThis.setTimeout
    globalThis.setTimeout = target.setTimeout
    try {
      await Effect.runPromise(Effect.timeout(Effect.void, "1 second"))
    } finally {
      globalThis.setTimeout = saved
    }
    await fired(timers.setTimeout, 5) // an unguarded timer, so the cleared one would have fired by now
    expect(guard.take()).toEqual([])
  })
})
