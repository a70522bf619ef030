/**
 * Progress on a terminal: a spinner with the elapsed time and what the agent is doing now (the tool in use,
 * the text it is writing), redrawn in place on stderr. Nothing at all when stderr is not a TTY.
 */
import type { Agent } from "@flotta/core"
import { Clock, Effect, Fiber, Ref } from "effect"
import * as Output from "./Output.js"

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

const oneLine = (text: string, max: number) => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length <= max ? flat : flat.slice(0, max - 1) + "…"
}

/** A short description of an activity, e.g. `Read src/index.ts` or `writing: The answer is`. */
export const describe = (activity: Agent.Activity): string => {
  if (activity._tag === "Text") return `writing: ${oneLine(activity.text, 50)}`
  if (activity._tag === "TextDelta") return "writing"
  if (activity._tag === "ToolResult") return `${activity.tool}: ${activity.outcome.status}`
  const input = activity.input as Record<string, unknown> | undefined
  const target = input?.["file_path"] ?? input?.["command"] ?? input?.["pattern"] ?? input?.["path"]
  return typeof target === "string" ? `${activity.tool} ${oneLine(target, 50)}` : activity.tool
}

export interface Spinner {
  /** Feed it the agent's activity (safe to call from any callback). */
  readonly onActivity: (activity: Agent.Activity) => void
  /** Stops and clears the line. */
  readonly stop: Effect.Effect<void>
  /** Runs `effect` with the line cleared and the spinner still (a question put to the person, say). */
  readonly hold: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

/** Starts a spinner when stderr is a terminal; otherwise one that does nothing. */
export const start = Effect.fn("Spinner.start")(function*(label: string) {
  if (!Output.stderrIsTTY()) {
    return {
      onActivity: () => undefined,
      stop: Effect.void,
      hold: (effect) => effect
    } satisfies Spinner
  }
  let step = "starting claude"
  const started = yield* Clock.currentTimeMillis
  const frame = yield* Ref.make(0)
  const columns = Math.max(20, (process.stderr.columns ?? 80) - 1)
  let held = 0
  const draw = Effect.gen(function*() {
    if (held > 0) return
    const i = yield* Ref.getAndUpdate(frame, (n) => n + 1)
    const seconds = ((yield* Clock.currentTimeMillis) - started) / 1000
    const line = `${FRAMES[i % FRAMES.length]} ${label} ${seconds.toFixed(1)}s · ${step}`
    yield* Output.stderrRaw(`\r\x1b[K${line.slice(0, columns)}`)
  })
  const fiber = yield* draw.pipe(Effect.zipRight(Effect.sleep("100 millis")), Effect.forever, Effect.fork)
  return {
    onActivity: (activity) => {
      step = describe(activity)
    },
    stop: Fiber.interrupt(fiber).pipe(Effect.zipRight(Output.stderrRaw("\r\x1b[K"))),
    hold: (effect) =>
      Effect.acquireUseRelease(
        Effect.zipRight(Effect.sync(() => held++), Output.stderrRaw("\r\x1b[K")),
        () => effect,
        () => Effect.sync(() => held--)
      )
  } satisfies Spinner
})
