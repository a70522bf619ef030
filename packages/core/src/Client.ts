/**
 * `createFleet(options)`: the fleet for code that does not use Effect. The same operations as the `Flotta`
 * service, as Promises; a failure rejects with the same typed error object (it carries `_tag`).
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Cause, Effect, Exit, Fiber, Layer, ManagedRuntime, Option, Stream } from "effect"
import type { Scope } from "effect"
import type { Approval, Approvals } from "./Approvals.js"
import * as Flotta from "./Flotta.js"
import * as Operations from "./Operations.js"
import type { Permission } from "./Permission.js"
import type { Registry } from "./Registry.js"
import type { ReportEntry, ReportLog, ReportQuery, SubscribeOptions } from "./ReportLog.js"
import type { RunOptions, Runs } from "./Run.js"
import type { Store } from "./Store.js"
import type { GcOptions } from "./WorktreeGc.js"
import type { VerifyOptions } from "./Worktrees.js"

export interface SubscribeCallbacks extends SubscribeOptions {
  /** Called when this subscriber fell behind and `count` entries after seq `after` were not delivered. */
  readonly onMissed?: (count: number, after: number) => void
}

/** Stops a subscription; `ready` resolves once it is live. */
export type Unsubscribe = (() => void) & { readonly ready: Promise<void> }

/** A Promise runner on the fleet's runtime: the effect's typed failure rejects as the same object. */
export type Runner = <A, E>(effect: Effect.Effect<A, E, unknown>) => Promise<A>

/** The engine's services (what `Flotta.layer` provides): what an extension's layer may build on. */
export type Engine = Flotta.Flotta | Runs | Registry | ReportLog | Permission | Approvals | Store

/**
 * Something built on top of the engine that shows a Promise face of its own on the fleet object, under the
 * key it is given in `extensions`: `createFleet({ extensions: { x: someExtension } })` shows it as `fleet.x`.
 * Other packages of flotta export theirs; the engine knows none of them.
 */
export interface Extension<A> {
  /** Built on top of the engine; a failure to build it rejects the first call. Absent: nothing to add. */
  readonly layer?: Layer.Layer<never, unknown, Engine>
  /** The face: `run` runs an effect on the fleet's runtime (which holds the extension's layer). */
  readonly promises: (run: Runner) => A
}

export type Extensions = Readonly<Record<string, Extension<unknown>>>

/** The faces a set of extensions adds to the fleet object. */
export type Faces<X extends Extensions> = { readonly [K in keyof X]: X[K] extends Extension<infer A> ? A : never }

export interface CreateFleetOptions<X extends Extensions = Record<never, never>> extends Flotta.FleetOptions {
  readonly extensions?: X
}

const toPromise = <A, E>(
  runtime: ManagedRuntime.ManagedRuntime<Engine, unknown>,
  effect: Effect.Effect<A, E, Engine>
) =>
  new Promise<A>((resolve, reject) => {
    // A callback, not runPromiseExit: one Promise per call, settled the moment the fiber ends.
    runtime.runCallback(effect, {
      onExit: (exit) => {
        if (Exit.isSuccess(exit)) return resolve(exit.value)
        const failure = Cause.failureOption(exit.cause)
        reject(Option.isSome(failure) ? failure.value : Cause.squash(exit.cause))
      }
    })
  })

/** The fleet in memory over the real claude CLI (or `options.executable`), with any extensions. */
export const createFleet = <X extends Extensions = Record<never, never>>(
  options: CreateFleetOptions<X> = {}
): Fleet & Faces<X> => {
  const { extensions, ...fleetOptions } = options
  // The Promise API is an edge of its own: it provides the platform, as the cli does.
  return fromLayer(Flotta.layer(fleetOptions).pipe(Layer.provide(NodeContext.layer)), extensions)
}

/**
 * The Promise facade over any layer that provides the engine: `Flotta.layer(...)`, `Testing.layer(...)`, or
 * an application's own composition. Extensions' layers are built on top of it.
 */
export const fromLayer = <X extends Extensions = Record<never, never>>(
  engine: Layer.Layer<Engine, unknown>,
  extensions?: X
): Fleet & Faces<X> => {
  const added = Object.values(extensions ?? {}).flatMap((e) => (e.layer === undefined ? [] : [e.layer]))
  const layer = added.length === 0
    ? engine
    : Layer.provideMerge(Layer.mergeAll(...(added as [Layer.Layer<never, unknown, Engine>])), engine)
  const runtime: ManagedRuntime.ManagedRuntime<Engine, unknown> = ManagedRuntime.make(
    layer as Layer.Layer<Engine, unknown>
  )
  const runner: Runner = (effect) => toPromise(runtime, effect as Effect.Effect<never, never, Engine>)
  const faces = Object.fromEntries(
    Object.entries(extensions ?? {}).map(([key, extension]) => [key, extension.promises(runner)])
  ) as Faces<X>
  return Object.assign(facade(runtime), faces)
}

/** Every operation as a Promise: what the Promise facade is made of (a method that is an Effect takes nothing). */
export type Promises = {
  readonly [K in Operations.Name]: (
    ...args: Operations.Operations[K]["value"] extends true ? [] : Operations.ArgsOf<Operations.Operations[K]>
  ) => Promise<Operations.OutputOf<Operations.Operations[K]>>
}

/** The table's operations as Promises, each running its method through `run` (a failure rejects with its error). */
const promises = (run: (call: (fleet: Operations.Methods) => Effect.Effect<unknown, unknown>) => Promise<unknown>) =>
  Object.fromEntries(
    Operations.names.map((name) => [
      name,
      (...args: ReadonlyArray<unknown>) => run((fleet) => Operations.apply(fleet, name, args))
    ])
  ) as Promises

const askWatched = (f: Flotta.Flotta, name: string, text: string, options?: Flotta.AskOptions) =>
  Effect.flatMap(f.prompt(name, text, options), (turnId) => f.watch(name, turnId))

const facade = (runtime: ManagedRuntime.ManagedRuntime<Engine, unknown>) => {
  const run = <A, E>(f: (fleet: Flotta.Flotta) => Effect.Effect<A, E>) =>
    toPromise(runtime, Effect.flatMap(Flotta.Flotta, f))

  /**
   * Calls `onItem` with each item of a live subscription, until the returned function unsubscribes; its `ready`
   * rejects with the subscription's typed error when it cannot start (an unknown agent, say).
   */
  const listen = <A, E>(
    subscription: (fleet: Flotta.Flotta) => Effect.Effect<Stream.Stream<A>, E, Scope.Scope>,
    onItem: (item: A) => void
  ): Unsubscribe => {
    let live: () => void = () => undefined
    let refused: (error: E) => void = () => undefined
    const ready = new Promise<void>((resolve, reject) => {
      live = resolve
      refused = reject
    })
    const fiber = runtime.runFork(
      Effect.flatMap(Flotta.Flotta, (f) =>
        subscription(f).pipe(
          Effect.tap(() => Effect.sync(live)),
          Effect.flatMap(Stream.runForEach((item) => Effect.sync(() => onItem(item)))),
          Effect.tapError((error) => Effect.sync(() => refused(error))),
          Effect.scoped
        ))
    )
    return Object.assign(() => {
      runtime.runFork(Fiber.interrupt(fiber))
    }, { ready })
  }

  return {
    /** What came back from the store when the fleet started (nothing, for a new or memory store). */
    restored: () => run((f) => Effect.succeed(f.restored)),
    /** The store's kind, place, size, schema version and health. */
    store: () => run((f) => f.store),
    // Every operation of the table, by its name and arguments (`Operations`).
    ...promises((call) => run(call)),
    // A Promise's caller cannot interrupt it, so the wait needs no cancel-on-interrupt: `watch` is the lean one.
    ask: (name: string, text: string, askOptions?: Flotta.AskOptions) =>
      run((f) => Effect.map(askWatched(f, name, text, askOptions), (r) => r.text)),
    askResult: (name: string, text: string, askOptions?: Flotta.AskOptions) =>
      run((f) => askWatched(f, name, text, askOptions)),
    /** Live claude processes now, and the most there may be (`maxLive`). */
    processes: () => run((f) => f.processes),
    /** The credential groups parked at a usage limit now. */
    parking: () => run((f) => f.parking),
    reports: (query?: ReportQuery) => run((f) => f.reports(query)),
    boot: (config: unknown) => run((f) => f.boot(config)),
    run: (runOptions: RunOptions) => run((f) => f.run(runOptions)),
    runAsync: (runOptions: RunOptions) => run((f) => f.runAsync(runOptions)),
    verify: (cwd: string, verifyOptions: VerifyOptions & { readonly name?: string }) =>
      run((f) => f.verify(cwd, verifyOptions)),
    verifyAsync: (cwd: string, verifyOptions: VerifyOptions & { readonly name?: string }) =>
      run((f) => f.verifyAsync(cwd, verifyOptions)),
    worktrees: (cwd: string) => run((f) => f.worktrees(cwd)),
    gcWorktrees: (cwd: string, gcOptions?: GcOptions) => run((f) => f.gcWorktrees(cwd, gcOptions)),
    /**
     * Live report entries; returns the function that unsubscribes, whose `ready` resolves once the
     * subscription is live (every entry posted after that is delivered, or counted by `onMissed`).
     */
    subscribe: (onEntry: (entry: ReportEntry) => void, callbacks: SubscribeCallbacks = {}): Unsubscribe =>
      listen((f) => f.subscribe(callbacks), (notice) => {
        if (notice._tag === "Entry") onEntry(notice.entry)
        else callbacks.onMissed?.(notice.count, notice.after)
      }),
    /**
     * One agent's turns as they happen (`tool_call`, `tool_result`, `assistant_text`, a streaming agent's
     * `text_delta`, and the rest of its report entries), from now on; returns the function that unsubscribes,
     * whose `ready` resolves once the feed is live, or rejects with AgentNotFound.
     */
    follow: (name: string, onEntry: (entry: ReportEntry) => void, callbacks: SubscribeCallbacks = {}): Unsubscribe =>
      listen((f) => f.follow(name, callbacks), (notice) => {
        if (notice._tag === "Entry") onEntry(notice.entry)
        else callbacks.onMissed?.(notice.count, notice.after)
      }),
    /**
     * Called with each new pending approval; returns the function that unsubscribes, whose `ready` resolves once
     * the subscription is live.
     */
    onApproval: (onRequest: (approval: Approval) => void): Unsubscribe =>
      listen((f) => f.subscribeApprovals, onRequest),
    /** Closes every agent (their children exit) and releases the fleet. */
    shutdown: () => runtime.dispose(),
    /** The Effect runtime, for mixing both styles. */
    runtime
  }
}

/** The fleet's Promise facade (without extensions' faces). */
export type Fleet = ReturnType<typeof facade>
