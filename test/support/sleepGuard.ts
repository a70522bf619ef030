/**
 * The unit ring's real-time sleep guard: wraps a global object's timers so that a timer callback with a delay of
 * 1 ms or more that actually fires is recorded, with its delay and the stack where it was scheduled. A unit test
 * drives time with `TestClock`; a timer that fires in it waited on the wall clock. Not sleeps, never recorded:
 * timers cleared before they fire (vitest's own, Effect's live `timeout`s, the MCP SDK's request timeouts), 0 ms
 * ones (Effect's scheduler), and a library's own housekeeping outside Effect's Clock (see `scheduler`), which fires
 * whenever a test runs long on a loaded machine. The setup file (noProcess.ts) installs it and fails the test.
 */
import { Fiber, Option } from "effect"
import type { Tracer } from "effect"
import { promisify } from "node:util"

/** One timer that fired: what scheduled it, with which delay, and where. */
export interface Firing {
  readonly api: string
  readonly delay: number
  readonly stack: string
}

/** A timer function as the guard sees it (`setTimeout`, `setInterval`): callback first, then the delay. */
type TimerFunction = (callback: unknown, delay?: unknown, ...args: Array<unknown>) => unknown

/** `node:timers/promises`' `setTimeout`: the delay first, resolved with `value`. */
type PromiseSleep = (delay?: unknown, value?: unknown, options?: unknown) => Promise<unknown>

export interface SleepGuard {
  /**
   * Replaces `setTimeout` and `setInterval` of `target` (globalThis, `node:timers`, a fake) with recording ones;
   * `util.promisify(setTimeout)` is recorded too.
   */
  readonly install: (target: object) => void
  /** Replaces `setTimeout` of `target` (`node:timers/promises`) with a recording one. */
  readonly installPromises: (target: object) => void
  /** The firings since the last call, and forgets them. */
  readonly take: () => ReadonlyArray<Firing>
}

/** Frames that say nothing of who slept: the guard's own, Node's, vitest's and Effect's run loop. */
const noise = /sleepGuard\.ts|node:internal|node_modules\/(vitest|@vitest|tinypool|effect)\//

/** Effect's live `Clock` (`Effect.sleep`, a `Schedule`, `Effect.timeout`), in its sources or its build. */
const liveClock = /node_modules\/effect\/(src|dist\/(esm|cjs))\/internal\/clock\./

/** A frame of a library or of Node itself, not of this repository. */
const library = /node_modules\/|\(node:|^\s*at node:/

/**
 * Who scheduled a timer, from the stack at `setTimeout` (its first line is the guard's own frame):
 * - `"clock"`: Effect's live Clock, for our code or an Effect library (`@effect/cluster`): a sleep;
 * - `"library"`: a library's or Node's own timer, outside the Clock (undici's clock tick, an SSE keep-alive, a
 *   server's connection sweep): housekeeping that fires whenever a test runs long, not a wait of the test's;
 * - `"code"`: this repository's code, a test or its support: a sleep.
 */
export const scheduler = (stack: string): "clock" | "library" | "code" => {
  if (liveClock.test(stack)) return "clock"
  const innermost = stack.split("\n").slice(1).find((line) => line.includes(" at ") && !/sleepGuard\.ts/.test(line))
  return innermost !== undefined && library.test(innermost) ? "library" : "code"
}

/** The spans of the Effect fiber scheduling a timer, innermost first (Effect's own frames say nothing). */
const effectSpans = (): Option.Option<string> =>
  Option.map(Fiber.getCurrentFiber(), (fiber) => {
    const names: Array<string> = []
    let span: Tracer.AnySpan | undefined = fiber.currentSpan
    while (span !== undefined && names.length < 8) {
      names.push(span._tag === "Span" ? span.name : `external span ${span.spanId}`)
      span = span._tag === "Span" ? Option.getOrUndefined(span.parent) : undefined
    }
    return `    in Effect fiber #${fiber.id().id}` + (names.length > 0 ? `, span ${names.join(" < ")}` : "")
  })

/**
 * Where a timer was scheduled, shown without the frames that say nothing (deep enough to reach a test), or none
 * for a library's housekeeping.
 */
const scheduledAt = (): Option.Option<string> => {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 40
  const stack = new Error().stack ?? ""
  Error.stackTraceLimit = limit
  const by = scheduler(stack)
  if (by === "library") return Option.none()
  const frames = stack.split("\n").slice(1).filter((line) => !noise.test(line)).slice(0, 12)
  const clock = by === "clock" ? ["    on the live Clock (Effect.sleep, a Schedule or a timeout)"] : []
  return Option.some([...Option.toArray(effectSpans()), ...clock, ...frames].join("\n"))
}

/** `target[name]`, a function, called with `target` as `this`. */
const functionAt = (target: object, name: string): (...args: Array<unknown>) => unknown => {
  const original: unknown = Reflect.get(target, name)
  if (typeof original !== "function") throw new Error(`the sleep guard found no function ${name} to wrap`)
  return (...args) => Reflect.apply(original, target, args)
}

const delayOf = (delay: unknown): number => {
  const ms = Number(delay)
  return Number.isFinite(ms) ? ms : 0
}

export const make = (): SleepGuard => {
  let firings: Array<Firing> = []
  const fired = (api: string, delay: number, stack: string) => {
    // A setInterval that keeps firing is one sleep, said once.
    if (firings.length < 50 && !firings.some((f) => f.stack === stack && f.api === api)) {
      firings.push({ api, delay, stack })
    }
  }

  const wrap = (api: string, original: TimerFunction): TimerFunction =>
    function(callback, delay, ...args) {
      const ms = delayOf(delay)
      if (typeof callback !== "function" || ms < 1) return original(callback, delay, ...args)
      const at = scheduledAt()
      if (Option.isNone(at)) return original(callback, delay, ...args)
      const stack = at.value
      return original(
        function(this: unknown, ...given: Array<unknown>) {
          fired(api, ms, stack)
          return Reflect.apply(callback, this, given)
        },
        delay,
        ...args
      )
    }

  const wrapPromise = (original: PromiseSleep): PromiseSleep => (delay, value, options) => {
    const ms = delayOf(delay)
    const sleep = original(delay, value, options)
    const at = ms < 1 ? Option.none() : scheduledAt()
    if (Option.isNone(at)) return sleep
    const stack = at.value
    return sleep.then((result) => {
      fired("timers/promises.setTimeout", ms, stack)
      return result
    })
  }

  const install = (target: object) => {
    const setTimeout = wrap("setTimeout", functionAt(target, "setTimeout"))
    const custom: unknown = Reflect.get(Reflect.get(target, "setTimeout"), promisify.custom)
    if (typeof custom === "function") {
      const original: PromiseSleep = (...args) => Promise.resolve(Reflect.apply(custom, undefined, args))
      Object.defineProperty(setTimeout, promisify.custom, { value: wrapPromise(original), configurable: true })
    }
    Reflect.set(target, "setTimeout", setTimeout)
    Reflect.set(target, "setInterval", wrap("setInterval", functionAt(target, "setInterval")))
  }

  const installPromises = (target: object) => {
    const original = functionAt(target, "setTimeout")
    Reflect.set(target, "setTimeout", wrapPromise((...args) => Promise.resolve(original(...args))))
  }

  const take = () => {
    const taken = firings
    firings = []
    return taken
  }

  return { install, installPromises, take }
}

/** The failure for timers that fired (`when`: "during this test", …): each delay, and where it was scheduled. */
export const message = (firings: ReadonlyArray<Firing>, when: string): string =>
  [
    `the unit ring never sleeps in real time: ${firings.length} timer(s) of 1 ms or more fired ${when} ` +
    `(drive time with TestClock, or move the test to the integration ring)`,
    ...firings.map((f) => `${f.api}(…, ${f.delay}) fired, scheduled at\n${f.stack}`)
  ].join("\n\n")
