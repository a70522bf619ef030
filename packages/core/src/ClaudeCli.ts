/**
 * The seam below `Agent` that starts one `claude` process. Its live implementation (`layer`) runs the real
 * binary through `ClaudeSession` (which executable: config, then FLOTTA_CLAUDE_PATH, then the pinned
 * `@anthropic-ai/claude-code` dependency, then `claude` on PATH) with the duplex flags and the inherited
 * environment; `layerCommand` runs any other program that speaks the protocol (a fake CLI script); and
 * `@flotta/core/Testing` provides an in-memory one. The agent above it (queue, permission, supervision,
 * report log, transcripts) is the same in all three.
 */
import * as CommandExecutor from "@effect/platform/CommandExecutor"
import { Config, Context, Data, Deferred, Duration, Effect, Layer, Option, Scope } from "effect"
import { createRequire } from "node:module"
import * as path from "node:path"
import type * as Protocol from "./ClaudeProtocol.js"
import * as ClaudeSession from "./ClaudeSession.js"
import * as Telemetry from "./Telemetry.js"

/** The `claude` version flotta is tested against (the pinned dependency). */
export const TESTED_VERSION = "2.1.332"

export interface ClaudeExecutable {
  /** The program to execute. */
  readonly command: string
  /** Arguments placed before the claude flags (a fake CLI script, for example). */
  readonly prefixArgs: ReadonlyArray<string>
  /** Where the executable came from, for `doctor` and error messages (`memory`: `@flotta/core/Testing`). */
  readonly source: "config" | "env" | "dependency" | "path" | "custom" | "memory"
}

export interface ExitInfo {
  readonly exitCode: number | null
  readonly stderr: string
}

/** The frames of turns a process hands its agent (the control protocol stays inside the process). */
export type TurnFrame = Exclude<
  Protocol.Frame,
  { readonly _tag: "ControlRequest" | "ControlResponse" | "ControlCancel" }
>

/** A control request this host sent was answered with an error, or the process went away first. */
export class ControlRequestFailed extends Data.TaggedError("ControlRequestFailed")<{
  readonly subtype: string
  readonly reason: string
}> {}

/** Answers the CLI's own control requests (`can_use_tool`, hooks, ...): the inner `response` object. */
export type ControlHandler = (
  request: Protocol.ControlRequestFrame["request"]
) => Effect.Effect<
  { readonly _tag: "Success"; readonly response: unknown } | { readonly _tag: "Error"; readonly error: string }
>

export interface StartOptions {
  /** The agent's name (for logs and for implementations that script per agent). */
  readonly name: string
  readonly args: ReadonlyArray<string>
  readonly cwd: string
  /** Added to the host's environment (less the parent-session markers). */
  readonly env: Readonly<Record<string, string>>
  readonly onControlRequest: ControlHandler
  /**
   * Each turn frame, in order, called synchronously by whatever reads the process's output: it must not throw
   * or block (the agent records the frame and completes its turn on the spot).
   */
  readonly onFrame: (frame: TurnFrame, now: number) => void
  /** Told once, when the process has exited by itself (not when its scope stops it). */
  readonly onExit: (exit: ExitInfo) => void
  /** How long a child may take to exit after stdin EOF, then after SIGTERM (default 2 s, then 5 s). */
  readonly eofGrace?: Duration.DurationInput
  readonly termGrace?: Duration.DurationInput
}

/** The process could not be started at all (no binary, no working directory, ...). */
export class StartError extends Data.TaggedError("StartError")<{ readonly reason: string }> {}

/** One running `claude` process, as its agent sees it. Closing the scope it was started in stops it. */
export interface ClaudeProcess {
  /** The OS process id; `null` for a process that is not an OS process (in memory). */
  readonly pid: number | null
  /** Sends one user turn; it never waits (the line is queued for the process's one writer). */
  readonly sendUser: (text: string) => void
  /** Sends a control request and waits for its answer. */
  readonly request: (
    request: Record<string, unknown> & { readonly subtype: string }
  ) => Effect.Effect<unknown, ControlRequestFailed>
  /** Completes when the process has exited. */
  readonly exited: Deferred.Deferred<ExitInfo>
  /** Milliseconds (Clock time) of its last output: stall detection reads it. */
  readonly lastOutputAt: () => number
  readonly stderrTail: () => string
  /** Ends its input: the CLI exits on its own shortly after. */
  readonly endInput: Effect.Effect<void>
}

export class ClaudeCli extends Context.Tag("@flotta/core/ClaudeCli")<ClaudeCli, {
  /** What runs: shown by `doctor` and in errors. */
  readonly executable: ClaudeExecutable
  /** Starts one process in the current scope; closing the scope stops it. */
  readonly start: (options: StartOptions) => Effect.Effect<ClaudeProcess, StartError, Scope.Scope>
}>() {
  /** The real binary; `configuredPath` wins over everything else. */
  static readonly layer = (configuredPath?: string) =>
    Layer.effect(ClaudeCli, Effect.flatMap(resolve(configuredPath), live))

  /** Any executable that speaks the protocol, e.g. `node fake-claude.mjs`. */
  static readonly layerCommand = (command: string, prefixArgs: ReadonlyArray<string> = []) =>
    Layer.effect(ClaudeCli, live({ command, prefixArgs, source: "custom" }))
}

/**
 * Processes of an executable, started with the platform's `CommandExecutor` captured here. With children's
 * telemetry on (`ChildTelemetry`), each process also gets its telemetry environment, its `TRACEPARENT` taken from
 * the span current when it starts.
 */
const live = (executable: ClaudeExecutable) =>
  Effect.gen(function*() {
    const executor = yield* CommandExecutor.CommandExecutor
    const telemetry = yield* Telemetry.ChildTelemetry
    const withTelemetry = (options: StartOptions): Effect.Effect<StartOptions> =>
      telemetry === null ? Effect.succeed(options) : Effect.map(
        Effect.option(Effect.currentParentSpan),
        (span) => ({
          ...options,
          env: {
            ...options.env,
            ...Telemetry.childEnvironment(
              telemetry,
              options.name,
              span,
              options.env["OTEL_RESOURCE_ATTRIBUTES"] ?? process.env["OTEL_RESOURCE_ATTRIBUTES"]
            )
          }
        })
      )
    return {
      executable,
      start: (options: StartOptions) =>
        withTelemetry(options).pipe(
          Effect.flatMap((started) => ClaudeSession.start({ ...started, executable })),
          Effect.provideService(CommandExecutor.CommandExecutor, executor)
        )
    }
  })

/** The `claude` binary the pinned dependency ships, when it is installed. */
export const dependencyBinary = (): Option.Option<string> => {
  try {
    const require = createRequire(import.meta.url)
    const manifest = require.resolve("@anthropic-ai/claude-code/package.json")
    const pkg = require(manifest) as { readonly bin?: string | Record<string, string> }
    const bin = typeof pkg.bin === "string" ? pkg.bin : pkg.bin?.["claude"]
    return bin === undefined ? Option.none() : Option.some(path.join(path.dirname(manifest), bin))
  } catch {
    return Option.none()
  }
}

export const resolve = (configuredPath?: string): Effect.Effect<ClaudeExecutable> =>
  Effect.gen(function*() {
    if (configuredPath !== undefined && configuredPath.length > 0) {
      return { command: configuredPath, prefixArgs: [], source: "config" } as const
    }
    const fromEnv = yield* Config.option(Config.nonEmptyString("FLOTTA_CLAUDE_PATH")).pipe(
      Effect.orElseSucceed(() => Option.none<string>())
    )
    if (Option.isSome(fromEnv)) return { command: fromEnv.value, prefixArgs: [], source: "env" } as const
    const dependency = dependencyBinary()
    if (Option.isSome(dependency)) {
      return { command: dependency.value, prefixArgs: [], source: "dependency" } as const
    }
    return { command: "claude", prefixArgs: [], source: "path" } as const
  })

/** The flags every duplex child gets: NDJSON both ways, permission prompts answered by the host. */
export const DUPLEX_FLAGS: ReadonlyArray<string> = [
  "--input-format",
  "stream-json",
  "--output-format",
  "stream-json",
  "--verbose",
  "--permission-prompt-tool",
  "stdio"
]

/**
 * Markers a Claude Code session sets for itself. A fleet running inside such a session must not hand them to
 * its children, which would otherwise believe they are nested in it. Credentials and endpoints pass through.
 */
export const PARENT_SESSION_MARKERS: ReadonlyArray<string> = [
  "CLAUDECODE",
  "CLAUDE_CODE_ENTRYPOINT",
  "CLAUDE_CODE_SSE_PORT",
  "CLAUDE_AGENT_SDK_VERSION",
  "CLAUDE_CODE_SDK_READS_SESSION_STATE"
]

/**
 * The CLI's own headless wait at a usage limit (undocumented in 2.1.332; CLAUDE-CLI.md, "Usage limits"): with
 * `1` the CLI waits inside the turn until the reset and retries; with `0` it reports the limit at once.
 */
export const RETRY_WATCHDOG = "CLAUDE_CODE_RETRY_WATCHDOG"

/**
 * Whether the CLI, not the fleet, waits out usage limits for an agent with this environment (its `env` over the
 * fleet's): only when it sets `CLAUDE_CODE_RETRY_WATCHDOG=1` itself. Such an agent is never parked.
 */
export const cliWaitsAtLimits = (env: Readonly<Record<string, string>>): boolean => env[RETRY_WATCHDOG] === "1"

/**
 * The child's environment: the host's, less the parent-session markers, plus the agent's own additions.
 * This is the one place that reads `process.env` whole: a child inherits the host environment by design.
 *
 * Exactly one side waits at a usage limit, never both: the fleet parks (`Parking`), so every child gets
 * `CLAUDE_CODE_RETRY_WATCHDOG=0` (whatever the host has), unless the agent's own environment asks for `1`: then
 * the CLI waits inside the turn and the fleet does not park that agent (`cliWaitsAtLimits`).
 */
export const childEnv = (extra: Readonly<Record<string, string>> = {}): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !PARENT_SESSION_MARKERS.includes(key)) env[key] = value
  }
  Object.assign(env, extra)
  env[RETRY_WATCHDOG] = cliWaitsAtLimits(extra) ? "1" : "0"
  return env
}
