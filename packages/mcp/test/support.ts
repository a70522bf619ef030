/**
 * Test support for the MCP unit ring: the fleet is `@flotta/core/Testing` (an in-memory Claude, no process),
 * every timer runs on the TestClock, and tests wait for conditions (a timer armed, a span ended, a count
 * reached), never for time.
 */
import * as Testing from "@flotta/core/Testing"
import type { CallToolResult } from "@modelcontextprotocol/client"
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { Chunk, Clock, Duration, Effect, Fiber, Queue, TestClock, Tracer } from "effect"
import type { Exit } from "effect"
import * as McpConfig from "../src/McpConfig.js"
import * as McpHandler from "../src/McpHandler.js"

/**
 * The scripted model the tests share, a small command language like the fake CLI's: `slow <ms> [words]` answers
 * `slow done [words]` after that long on the Clock, `hang` never answers, `error <status>` is an API error,
 * `json <value>` is structured output (for runs with a JSON schema); anything else is echoed as `echo: <prompt>`.
 */
export const script: Testing.Model = ({ prompt }) => {
  const [command, ...rest] = prompt.split(" ")
  switch (command) {
    case "slow": {
      const [ms, ...words] = rest
      return Testing.delay(Duration.millis(Number(ms)), ["slow done", ...words].join(" "))
    }
    case "hang":
      return Testing.hang()
    case "error":
      return Testing.apiError(Number(rest[0]))
    case "json":
      return Testing.structured(JSON.parse(rest.join(" ")))
    default:
      return `echo: ${prompt}`
  }
}

/** The whole engine over the in-memory Claude, with the shared script unless the options name another model. */
export const fleet = (options: Testing.Options = {}) => Testing.layer({ model: script, ...options })

/** The two protocol eras a client can speak, as the SDK client's negotiation modes. */
export const ERAS = [
  { era: "legacy", negotiation: { mode: "legacy" } },
  { era: "modern", negotiation: { mode: { pin: "2026-07-28" } } }
] as const

export type Era = (typeof ERAS)[number]

/** Settings for an in-process handler (nothing listens). */
export const settings = (input: McpConfig.McpConfigInput = {}) => Effect.orDie(McpConfig.make(input))

/** The handler over the fleet in context, scoped. */
export const handler = (input: McpConfig.McpConfigInput = {}) => Effect.flatMap(settings(input), McpHandler.make)

/** An SDK client over a fetch function (in process: no socket), closed with the scope. */
export const connect = (
  fetch: (request: Request) => Promise<Response>,
  era: Era,
  url = "http://127.0.0.1/mcp",
  headers: Record<string, string> = {}
) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "flotta-test", version: "0.0.0" }, { versionNegotiation: era.negotiation })
      const transport = new StreamableHTTPClientTransport(new URL(url), {
        // What a socket would carry: the Host header (the guards check it).
        fetch: (input, init) => {
          const request = new Request(input, init)
          if (!request.headers.has("host")) request.headers.set("host", new URL(request.url).host)
          return fetch(request)
        },
        requestInit: { headers }
      })
      await client.connect(transport)
      // As real clients do: the listing arms the client's validation of every result against its outputSchema.
      await client.listTools()
      return client
    }),
    (client) => Effect.promise(() => client.close().catch(() => undefined))
  )

/** A tool call; the result as the client got it. */
export const call = (
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
  options: Parameters<Client["callTool"]>[1] = {}
) => Effect.promise(() => client.callTool({ name, arguments: args }, options) as Promise<CallToolResult>)

/** A successful call's structured content. */
export const structured = <A = Record<string, unknown>>(result: CallToolResult): A => {
  if (result.isError === true) throw new Error(`unexpected tool error: ${JSON.stringify(result.content)}`)
  return result.structuredContent as A
}

export const text = (result: CallToolResult) =>
  result.content.map((block) => (block.type === "text" ? block.text : "")).join("\n")

/**
 * Reads until `predicate` holds: waiting for a condition, never for time. Between reads the fiber yields, so
 * the server's fibers and the client's promises (an in-process fetch: no socket) run; the TestClock stands
 * still. A condition that never holds fails the test after `limit` reads, naming what it waited for.
 */
export const until = <A, E, R>(
  read: Effect.Effect<A, E, R>,
  predicate: (value: A) => boolean,
  what: string,
  limit = 100_000
): Effect.Effect<A, E, R> =>
  Effect.gen(function*() {
    for (let i = 0; i < limit; i++) {
      const value = yield* read
      if (predicate(value)) return value
      yield* Effect.yieldNow()
    }
    return yield* Effect.dieMessage(`gave up waiting for ${what}`)
  })

/**
 * A client's progress notifications as they arrive: pass `onprogress` to a call; `received(n)` waits for the
 * n-th one (taken from a queue, not polled) and `all` gives every one so far.
 */
export const progressLog = Effect.gen(function*() {
  const queue = yield* Queue.unbounded<Progress>()
  const seen: Array<Progress> = []
  const received = (n: number) =>
    Effect.gen(function*() {
      while (seen.length < n) seen.push(yield* Queue.take(queue))
      return seen
    })
  /** Every notification so far. */
  const all = Effect.map(Queue.takeAll(queue), (rest) => {
    seen.push(...rest)
    return seen
  })
  return { onprogress: (p: Progress) => Queue.unsafeOffer(queue, p), received, all } as const
})

export interface Progress {
  readonly progress: number
  readonly total?: number | undefined
  readonly message?: string | undefined
}

/** How many timers are due at `at` on the TestClock (interrupted sleeps stay listed until the clock passes them). */
const timersDue = (at: number) => Effect.map(TestClock.sleeps(), Chunk.reduce(0, (n, due) => (due === at ? n + 1 : n)))

/**
 * Waits until `count` timers are due at exactly `offset` from now on the TestClock: a tick has armed the next one,
 * a sweep its next run. Adjusting the clock before that would move time past a timer not yet armed. (For
 * something the test starts, `forkArmed` counts only the timers armed after it.)
 */
export const armed = (offset: Duration.DurationInput, count = 1) =>
  Effect.gen(function*() {
    const due = (yield* Clock.currentTimeMillis) + Duration.toMillis(offset)
    yield* until(timersDue(due), (n) => n >= count, `${count} timer(s) armed, due in ${Duration.format(offset)}`)
  })

/**
 * Forks `effect` and waits until it (or what it set off, a server handler say) has armed `count` timers due at
 * `offset` from now on the TestClock: counted against the timers due then before the fork, since a wait that
 * already ended leaves its timer listed.
 */
export const forkArmed = <A, E, R>(effect: Effect.Effect<A, E, R>, offset: Duration.DurationInput, count = 1) =>
  Effect.gen(function*() {
    const due = (yield* Clock.currentTimeMillis) + Duration.toMillis(offset)
    const before = yield* timersDue(due)
    const fiber = yield* Effect.fork(effect)
    yield* until(
      timersDue(due),
      (n) => n >= before + count,
      `${count} timer(s) armed, due in ${Duration.format(offset)}`
    )
    return fiber
  })

/**
 * A tool call that waits on the TestClock: once the server has armed its timer `armedIn` ahead, the clock moves
 * by `advance` (default: to that timer) and the call's result is returned.
 */
export const callAcross = (
  client: Client,
  name: string,
  args: Record<string, unknown>,
  armedIn: Duration.DurationInput,
  advance: Duration.DurationInput = armedIn
) =>
  Effect.gen(function*() {
    const fiber = yield* forkArmed(call(client, name, args), armedIn)
    yield* TestClock.adjust(advance)
    return yield* Fiber.join(fiber)
  })

/** A tracer that records each span's name and how it ended, for checking that a cancel reached a tool. */
export const recordingTracer = () => {
  const ended: Array<{ readonly name: string; readonly exit: Exit.Exit<unknown, unknown> }> = []
  let ids = 0
  const tracer = Tracer.make({
    span: (name, parent, context, links, startTime, kind) => {
      const attributes = new Map<string, unknown>()
      const span: Tracer.Span = {
        _tag: "Span",
        name,
        spanId: `span-${++ids}`,
        traceId: "trace",
        parent,
        context,
        status: { _tag: "Started", startTime },
        attributes,
        links,
        sampled: true,
        kind,
        end: (_endTime, exit) => {
          ended.push({ name, exit })
        },
        attribute: (key, value) => {
          attributes.set(key, value)
        },
        event: () => {},
        addLinks: () => {}
      }
      return span
    },
    context: (f) => f()
  })
  /** The first span named `name` that ended after the first `from` ones. */
  const endedSpan = (name: string, from = 0) =>
    until(
      Effect.sync(() => ended.slice(from).find((span) => span.name === name)),
      (span) => span !== undefined,
      `the span ${name} to end`
    ).pipe(Effect.map((span) => span!))
  return { tracer, ended, endedSpan }
}
