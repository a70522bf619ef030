/**
 * The seam below `Agent` that starts one `claude` process. Its live implementation (`layer`) runs the real
 * binary through `ClaudeSession` (which executable: config, then FLOTTA_CLAUDE_PATH, then the pinned
 * `@anthropic-ai/claude-code` dependency, then `claude` on PATH) with the duplex flags and the inherited
 * environment; `layerCommand` runs any other program that speaks the protocol (a fake CLI script); and
 * `@flotta/core/Testing` provides an in-memory one. The agent above it (queue, permission, supervision,
 * report log, transcripts) is the same in all three. A sandboxed process (`StartOptions.sandboxed`) starts only
 * where the CLI's sandbox can run (`checkSandbox`; see `Sandbox`): it is never started unsandboxed.
 */
import * as CommandExecutor from "@effect/platform/CommandExecutor"
import { Config, Context, Data, Deferred, Duration, Effect, Layer, Option, Scope } from "effect"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import type * as Protocol from "./ClaudeProtocol.js"
import * as ClaudeSession from "./ClaudeSession.js"
import type { SandboxUnavailable } from "./Errors.js"
import * as Sandbox from "./Sandbox.js"
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
  /**
   * The process must run sandboxed (its `--settings` turn the CLI's sandbox on): it does not start unless the
   * sandbox can run here (`SandboxUnavailable`).
   */
  readonly sandboxed?: boolean
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
  readonly start: (
    options: StartOptions
  ) => Effect.Effect<ClaudeProcess, StartError | SandboxUnavailable, Scope.Scope>
  /**
   * Whether a sandboxed process of agent `name`, with `env` added to the host's environment, could run here:
   * `SandboxUnavailable` when it could not (checked again by `start` for a sandboxed process).
   */
  readonly checkSandbox: (
    name: string,
    env: Readonly<Record<string, string>>
  ) => Effect.Effect<void, SandboxUnavailable>
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
    // The CLI looks for the sandbox's tools on the child's own PATH.
    const checkSandbox = (name: string, env: Readonly<Record<string, string>>) =>
      Effect.suspend(() => Sandbox.check(name, Sandbox.here(childEnv(env)["PATH"] ?? "")))
    return {
      executable,
      checkSandbox,
      start: (options: StartOptions) =>
        (options.sandboxed === true ? checkSandbox(options.name, options.env) : Effect.void).pipe(
          Effect.zipRight(withTelemetry(options)),
          Effect.flatMap((started) => ClaudeSession.start({ ...started, executable })),
          Effect.provideService(CommandExecutor.CommandExecutor, executor)
        )
    }
  })

/** The native packages of `@anthropic-ai/claude-code`, by platform (as its own install script names them). */
const platformKey = (): string => {
  if (process.platform !== "linux") return `${process.platform}-${process.arch}`
  // glibc's runtime version is absent from the report on musl (Alpine).
  const report = process.report?.getReport() as { readonly header?: { readonly glibcVersionRuntime?: string } }
  return `linux-${process.arch}${report?.header?.glibcVersionRuntime === undefined ? "-musl" : ""}`
}

/** Whether a file starts like an executable of some platform (ELF, Mach-O, PE), not a script or a stub. */
const isNativeExecutable = (file: string): boolean => {
  let fd: number | undefined
  try {
    fd = fs.openSync(file, "r")
    const head = Buffer.alloc(4)
    if (fs.readSync(fd, head, 0, 4, 0) < 4) return false
    const magic = head.readUInt32BE(0)
    return head.toString("latin1") === "\x7fELF" || head.toString("latin1", 0, 2) === "MZ" ||
      [0xfeedface, 0xfeedfacf, 0xcefaedfe, 0xcffaedfe, 0xcafebabe].includes(magic)
  } catch {
    return false
  } finally {
    if (fd !== undefined) fs.closeSync(fd)
  }
}

/**
 * The `claude` binary the pinned dependency ships, when it is installed. The native binary lives in the platform
 * package (`@anthropic-ai/claude-code-linux-x64`, ...); the wrapper's own `bin/claude.exe` is only a placeholder
 * until its postinstall copies the binary over it, and npm 12 runs no such script unless the project allows it.
 * So the platform package is read first, and the wrapper's bin is taken only when it is a native binary.
 * `from` is where the dependency is looked up from (this module, unless a test says otherwise).
 */
export const dependencyBinary = (from: string = import.meta.url): Option.Option<string> => {
  let manifest: string
  const require = createRequire(from)
  try {
    manifest = require.resolve("@anthropic-ai/claude-code/package.json")
  } catch {
    return Option.none()
  }
  const binary = process.platform === "win32" ? "claude.exe" : "claude"
  try {
    const platformManifest = createRequire(manifest).resolve(
      `@anthropic-ai/claude-code-${platformKey()}/package.json`
    )
    const native = path.join(path.dirname(platformManifest), binary)
    if (isNativeExecutable(native)) return Option.some(native)
  } catch {
    // no platform package (installed with --omit=optional, or an unsupported platform): try the wrapper's bin
  }
  try {
    const pkg = require(manifest) as { readonly bin?: string | Record<string, string> }
    const bin = typeof pkg.bin === "string" ? pkg.bin : pkg.bin?.["claude"]
    if (bin === undefined) return Option.none()
    const wrapperBin = path.join(path.dirname(manifest), bin)
    return isNativeExecutable(wrapperBin) ? Option.some(wrapperBin) : Option.none()
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
