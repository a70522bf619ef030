/**
 * The REPL `flotta repl` runs, driven through streams as piped input drives it: each line settles before the next
 * is read, the session ends only after the last one, and a fleet's typed failure prints as its tag and message
 * (the stack only when verbose). The fleet is the real Promise facade over the in-memory Claude.
 */
import { assert, describe, it } from "@effect/vitest"
import { fromLayer } from "@flotta/core/Client"
import * as Testing from "@flotta/core/Testing"
import { Deferred, Effect, Exit, Fiber, Option } from "effect"
import { PassThrough } from "node:stream"
import * as ReplSession from "../src/ReplSession.js"

/** A session over streams (neither a terminal), with what it printed so far. */
const session = (context: Record<string, unknown>, verbose = false) => {
  const input = new PassThrough()
  const output = new PassThrough()
  let printed = ""
  output.on("data", (chunk) => (printed += String(chunk)))
  return {
    input,
    output,
    printed: () => printed,
    run: ReplSession.run({ prompt: "> ", context, input, output, verbose })
  }
}

/** Waits until the session has printed `text` (woken by what it prints, no timer). */
const printedSoFar = (repl: ReturnType<typeof session>, text: string) =>
  Effect.async<void>((resume) => {
    const check = () => {
      if (!repl.printed().includes(text)) return
      repl.output.off("data", check)
      resume(Effect.void)
    }
    repl.output.on("data", check)
    check()
    return Effect.sync(() => repl.output.off("data", check))
  })

describe("piped input", () => {
  it.live("evaluates each line once the one before has settled, and ends after the last has", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const started = { a: yield* Deferred.make<void>(), c: yield* Deferred.make<void>() }
      const gates: Record<string, (value: string) => void> = {}
      /** An operation the test finishes: `step("a")` logs its start, and its end once `gates.a` is called. */
      const step = (name: string, held: boolean) => {
        log.push(`start ${name}`)
        if (name === "a" || name === "c") Deferred.unsafeDone(started[name], Exit.void)
        const value = held ? new Promise<string>((resolve) => (gates[name] = resolve)) : Promise.resolve(name)
        return value.then((v) => {
          log.push(`end ${name}`)
          return v
        })
      }
      const repl = session({ step })
      // All at once, as a pipe delivers them, and the input ends at once too.
      repl.input.end(
        ["await step(\"a\", true)", "await step(\"b\", false)", "({", "  c: await step(\"c\", true) })", ""]
          .join("\n")
      )
      const fiber = yield* Effect.fork(repl.run)

      yield* Deferred.await(started.a)
      assert.deepStrictEqual(log, ["start a"], "b waits for a")
      gates["a"]!("a")
      yield* Deferred.await(started.c)
      assert.deepStrictEqual(log, ["start a", "end a", "start b", "end b", "start c"])
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)), "the input has ended, but c has not settled")
      gates["c"]!("c")
      yield* Fiber.join(fiber)
      assert.deepStrictEqual(log, ["start a", "end a", "start b", "end b", "start c", "end c"])
      const printed = repl.printed()
      assert.isBelow(printed.indexOf("'a'"), printed.indexOf("'b'"))
      assert.isBelow(printed.indexOf("'b'"), printed.indexOf("{ c: 'c' }"))
    }))

  it.live("`.exit` ends the session there, with the input still open and lines left unread", () =>
    Effect.gen(function*() {
      const repl = session({})
      repl.input.write("1 + 1\n.exit\n3 + 3\n")
      yield* repl.run
      assert.include(repl.printed(), "2")
      assert.notInclude(repl.printed(), "6")
    }))
})

describe("a failure", () => {
  const withFleet = <A, E>(body: (fleet: ReturnType<typeof fromLayer>) => Effect.Effect<A, E>) =>
    Effect.acquireUseRelease(
      Effect.sync(() => fromLayer(Testing.layer())),
      body,
      (fleet) => Effect.promise(() => fleet.shutdown())
    )

  it.live("prints as its tag and message, and the REPL goes on", () =>
    withFleet((fleet) =>
      Effect.gen(function*() {
        const repl = session({ fleet })
        repl.input.end(
          [
            "await fleet.spawn(\"scout\")",
            "await fleet.spawn(\"scout\")",
            "fleet.nope()",
            "(await fleet.list()).map((a) => a.name)"
          ].join("\n") + "\n"
        )
        yield* repl.run
        const printed = repl.printed()
        assert.include(
          printed,
          "> Uncaught AgentAlreadyExists: an agent named \"scout\" already exists: close it first or pick another name\n"
        )
        assert.notInclude(printed, "Proxy")
        assert.notMatch(printed, /^\s+at /m, "no stack")
        assert.include(printed, "Uncaught TypeError: fleet.nope is not a function", "other errors as Node prints them")
        assert.include(printed, "[ 'scout' ]")
      })
    ))

  it.live("shows its stack under the tag and message when verbose", () =>
    withFleet((fleet) =>
      Effect.gen(function*() {
        yield* Effect.promise(() => fleet.spawn("scout"))
        const repl = session({ fleet }, true)
        repl.input.end("await fleet.spawn(\"scout\")\n")
        yield* repl.run
        assert.match(
          repl.printed(),
          /^AgentAlreadyExists: an agent named "scout" already exists: close it first or pick another name\n(\s+at .+\n)+/m
        )
      })
    ))

  it.live("of a call not awaited is named in the Promise shown, then reported", () =>
    withFleet((fleet) =>
      Effect.gen(function*() {
        yield* Effect.promise(() => fleet.spawn("scout"))
        const repl = session({ fleet })
        const fiber = yield* Effect.fork(repl.run)
        repl.input.write("fleet.spawn(\"scout\")\n")
        yield* printedSoFar(repl, "Uncaught AgentAlreadyExists")
        repl.input.end()
        yield* Fiber.join(fiber)
        assert.include(repl.printed(), "<rejected> [AgentAlreadyExists]")
        assert.notInclude(repl.printed(), "Proxy")
      })
    ))
})

describe("describeFailure", () => {
  it("is the tag and message alone, or with the stack's frames", () => {
    const error = Object.assign(new Error("it broke"), { _tag: "Broken", name: "scout" })
    assert.strictEqual(ReplSession.describeFailure(error, false), "Broken: it broke")
    const verbose = ReplSession.describeFailure(error, true).split("\n")
    assert.strictEqual(verbose[0], "Broken: it broke")
    assert.isAbove(verbose.length, 1)
    for (const frame of verbose.slice(1)) assert.match(frame, /^\s+at /)
    assert.isFalse(ReplSession.isTagged({ _tag: "Some", value: 1 }), "a tagged value that is no Error")
  })
})
