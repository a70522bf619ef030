/**
 * The A/B of issue 34, item 9: one agent's turn path as a model, two ways, so that the only difference between them
 * is how turns wait for the agent.
 *   hand:  the engine's way (core internal/turn.ts `pump`): a plain array; a prompt pushes its turn and, if the agent
 *          is free, sends it on the spot; the result frame completes the caller's Deferred (`Deferred.unsafeDone`)
 *          and sends the next turn at once, with no fiber of the agent's own.
 *   queue: the design's way: an Effect `Queue`; a prompt offers its turn, and one fiber per agent takes a turn,
 *          sends it and awaits its Deferred, then takes the next.
 * Both run over the engine's real process seam (`ClaudeCli.layerCommand`, one long-lived fake child, its frames
 * decoded by `ClaudeSession`), or over an in-process stand-in that answers on the next macrotask (`inProcess`), so
 * the Queue's own cost shows without the child's noise. The rest of a real turn (records, spans, report entries)
 * is the same either way and left out: what differs is what is measured.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Deferred, Effect, Exit, Layer, ManagedRuntime, Queue, Scope } from "effect"
import { randomUUID } from "node:crypto"
import { ClaudeCli, DUPLEX_FLAGS } from "../../packages/core/src/ClaudeCli.js"
import type { TurnFrame } from "../../packages/core/src/ClaudeProcess.js"
import { FAKE, ROOT } from "../lib.js"

export type TurnPath = "hand" | "queue"

interface ModelTurn {
  readonly text: string
  readonly deferred: Deferred.Deferred<string>
}

/** What a model sends turns to: the real child's `sendUser`, or the in-process stand-in. */
interface Sink {
  readonly sendUser: (text: string) => void
}

export interface ModelAgent {
  readonly ask: (text: string) => Promise<string>
  readonly close: () => Promise<void>
}

const runtimeFor = () =>
  ManagedRuntime.make(Layer.provideMerge(ClaudeCli.layerCommand(process.execPath, [FAKE]), NodeContext.layer))

/**
 * The turn path over a sink. `result(text)` is what the sink's reader calls with a result frame's text,
 * synchronously, as `ClaudeSession` calls `onFrame`.
 */
const turnPath = (path: TurnPath, scope: Scope.Scope) => {
  let active: ModelTurn | undefined
  let sink: Sink | undefined
  let next = () => {}
  const result = (text: string) => {
    const turn = active
    if (turn === undefined) return
    active = undefined
    Deferred.unsafeDone(turn.deferred, Exit.succeed(text))
    next()
  }
  if (path === "hand") {
    const waiting: Array<ModelTurn> = []
    const pump = () => {
      if (active !== undefined || sink === undefined) return
      const turn = waiting.shift()
      if (turn === undefined) return
      active = turn
      sink.sendUser(turn.text)
    }
    next = pump
    const ask = (text: string) =>
      Effect.withFiberRuntime<string>((fiber) => {
        const deferred = Deferred.unsafeMake<string>(fiber.id())
        waiting.push({ text, deferred })
        pump()
        return Deferred.await(deferred)
      })
    return { result, ask, attach: (s: Sink) => Effect.sync(() => (sink = s)) }
  }
  const turns = Effect.runSync(Queue.unbounded<ModelTurn>())
  const loop = Queue.take(turns).pipe(
    Effect.flatMap((turn) =>
      Effect.suspend(() => {
        active = turn
        sink!.sendUser(turn.text)
        return Deferred.await(turn.deferred)
      })
    ),
    Effect.forever
  )
  const ask = (text: string) =>
    Effect.flatMap(
      Deferred.make<string>(),
      (deferred) => Queue.offer(turns, { text, deferred }).pipe(Effect.zipRight(Deferred.await(deferred)))
    )
  const attach = (s: Sink) =>
    Effect.suspend(() => {
      sink = s
      return Effect.asVoid(Effect.forkIn(loop, scope))
    })
  return { result, ask, attach }
}

/** The model over one real fake child started through the engine's process seam, with realistic frames. */
export const overChild = async (path: TurnPath, env: Readonly<Record<string, string>>): Promise<ModelAgent> => {
  const runtime = runtimeFor()
  const scope = await runtime.runPromise(Scope.make())
  const model = turnPath(path, scope)
  const onFrame = (frame: TurnFrame) => {
    if (frame._tag === "Result") model.result(frame.frame.result ?? "")
  }
  const process = await runtime.runPromise(
    Effect.flatMap(ClaudeCli, (cli) =>
      cli.start({
        name: `bench-${path}`,
        args: [...DUPLEX_FLAGS, "--session-id", randomUUID()],
        cwd: ROOT,
        env,
        onControlRequest: () => Effect.succeed({ _tag: "Error", error: "not in this bench" } as const),
        onFrame,
        onExit: () => {}
      })).pipe(Scope.extend(scope))
  )
  await runtime.runPromise(process.request({ subtype: "initialize" }))
  await runtime.runPromise(model.attach(process))
  return {
    ask: (text) => runtime.runPromise(model.ask(text)),
    close: async () => {
      await runtime.runPromise(Scope.close(scope, Exit.void))
      await runtime.dispose()
    }
  }
}

/** The model over an in-process stand-in that answers each user frame on the next macrotask, as I/O would. */
export const inProcess = async (path: TurnPath): Promise<ModelAgent> => {
  const runtime = runtimeFor()
  const scope = await runtime.runPromise(Scope.make())
  const model = turnPath(path, scope)
  await runtime.runPromise(model.attach({ sendUser: (text) => setImmediate(() => model.result(`echo: ${text}`)) }))
  return {
    ask: (text) => runtime.runPromise(model.ask(text)),
    close: async () => {
      await runtime.runPromise(Scope.close(scope, Exit.void))
      await runtime.dispose()
    }
  }
}
