/**
 * The seam below `Agent` that starts one `claude` process. Its live implementation (`layer`) runs the real
 * binary through `ClaudeSession` (which executable: config, then FLOTTA_CLAUDE_PATH, then the pinned
 * `@anthropic-ai/claude-code` dependency, then `claude` on PATH) with the duplex flags and the inherited
 * environment; `layerCommand` runs any other program that speaks the protocol (a fake CLI script); and
 * `@flotta/core/Testing` provides an in-memory one. The agent above it (queue, permission, supervision,
 * report log, transcripts) is the same in all three. A sandboxed process (`StartOptions.sandboxed`) starts only
 * where the CLI's sandbox can run (`checkSandbox`; see `Sandbox`): it is never started unsandboxed. The seam's
 * types and errors live below, in `ClaudeProcess`, and are re-exported here.
 */
import * as CommandExecutor from "@effect/platform/CommandExecutor"
import { Config, Context, Effect, Layer, Option, Schema, Scope } from "effect"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import type { ClaudeExecutable, ClaudeProcess, StartError, StartOptions } from "./ClaudeProcess.js"
import * as ClaudeSession from "./ClaudeSession.js"
import type { SandboxUnavailable } from "./Errors.js"
import * as Sandbox from "./Sandbox.js"
import * as Telemetry from "./Telemetry.js"

// The seam's types and the child's environment, where users have always imported them.
export type {
  ClaudeExecutable,
  ClaudeProcess,
  ControlHandler,
  ExitInfo,
  StartOptions,
  TurnFrame
} from "./ClaudeProcess.js"
export { ControlRequestFailed, StartError } from "./ClaudeProcess.js"
export { childEnv, cliWaitsAtLimits, PARENT_SESSION_MARKERS, RETRY_WATCHDOG } from "./ClaudeSession.js"

/** The `claude` version flotta is tested against (the pinned dependency). */
export const TESTED_VERSION = "2.1.332"

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
    const checkSandbox = Effect.fn("ClaudeCli.checkSandbox")(function*(
      name: string,
      env: Readonly<Record<string, string>>
    ) {
      return yield* Sandbox.check(name, Sandbox.here(ClaudeSession.childEnv(env)["PATH"] ?? ""))
    })
    // Untraced: the child's TRACEPARENT is the span current at its start (`flotta.spawn`, `flotta.run`), not one
    // of this seam's own.
    const start = Effect.fnUntraced(function*(options: StartOptions) {
      if (options.sandboxed === true) yield* checkSandbox(options.name, options.env)
      const started = yield* withTelemetry(options)
      return yield* ClaudeSession.start({ ...started, executable }).pipe(
        Effect.provideService(CommandExecutor.CommandExecutor, executor)
      )
    })
    return { executable, checkSandbox, start }
  })

/**
 * The native package of `@anthropic-ai/claude-code` this platform needs, named as its install script names them
 * (`linux-x64`, `linux-x64-musl`, `darwin-arm64`, ...). On Linux npm installs only the package whose libc matches,
 * so the glibc and the musl one are both tried, and Node's report (which costs ~10 ms) decides only if both are
 * there.
 */
const platformKeys = (): ReadonlyArray<string> =>
  process.platform === "linux"
    ? [`linux-${process.arch}`, `linux-${process.arch}-musl`]
    : [`${process.platform}-${process.arch}`]

/** The part of Node's diagnostic report that tells glibc from musl. */
const decodeReport = Schema.decodeUnknownOption(Schema.Struct({
  header: Schema.optionalWith(Schema.Struct({ glibcVersionRuntime: Schema.String }), { as: "Option" })
}))

/** Whether this Linux runs on musl (Alpine): glibc's runtime version is absent from Node's report there. */
const isMusl = (): boolean =>
  Option.isNone(decodeReport(process.report?.getReport()).pipe(Option.flatMap((report) => report.header)))

/** A package manifest's `bin`: one path, or paths by command. */
const decodeManifest = Schema.decodeUnknownOption(Schema.Struct({
  bin: Schema.optional(Schema.Union(Schema.String, Schema.Record({ key: Schema.String, value: Schema.String })))
}))

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
 * package (`@anthropic-ai/claude-code-linux-x64`, ...), which is either a dependency of ours (the `flotta` package
 * depends on the platform packages directly: they have no install script) or the wrapper's
 * (`@anthropic-ai/claude-code`, whose own `bin/claude.exe` is only a placeholder until its postinstall copies the
 * binary over it, and npm 12 runs no such script unless the project allows it). So the platform package is read
 * first, from here and from the wrapper, and the wrapper's bin is taken only when it is a native binary.
 * `from` is where the dependency is looked up from (this module, unless a test says otherwise).
 */
export const dependencyBinary = (from: string = import.meta.url): Option.Option<string> => {
  const require = createRequire(from)
  const wrapper = Option.liftThrowable(() => require.resolve("@anthropic-ai/claude-code/package.json"))()
  const binary = process.platform === "win32" ? "claude.exe" : "claude"
  const lookups = [require, ...Option.toArray(Option.map(wrapper, (manifest) => createRequire(manifest)))]
  const natives = platformKeys().flatMap((key) => {
    for (const lookup of lookups) {
      try {
        const native = path.join(
          path.dirname(lookup.resolve(`@anthropic-ai/claude-code-${key}/package.json`)),
          binary
        )
        if (isNativeExecutable(native)) return [{ key, native }]
      } catch {
        // not installed here (--omit=optional, another libc, an unsupported platform)
      }
    }
    return []
  })
  if (natives.length === 1) return Option.some(natives[0]!.native)
  if (natives.length > 1) {
    const musl = isMusl()
    const chosen = natives.find(({ key }) => key.endsWith("-musl") === musl) ?? natives[0]!
    return Option.some(chosen.native)
  }
  // No platform package: the wrapper's bin, once its postinstall made it the binary.
  return Option.flatMap(wrapper, (manifest) => {
    try {
      const bin = Option.flatMap(
        decodeManifest(require(manifest)),
        ({ bin }) => Option.fromNullable(typeof bin === "string" ? bin : bin?.["claude"])
      )
      return Option.filter(Option.map(bin, (b) => path.join(path.dirname(manifest), b)), isNativeExecutable)
    } catch {
      return Option.none()
    }
  })
}

export const resolve = Effect.fnUntraced(function*(configuredPath?: string) {
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

const NDJSON_BOTH_WAYS = ["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]

/** The flags every duplex child gets: NDJSON both ways, permission prompts answered by the host. */
export const DUPLEX_FLAGS: ReadonlyArray<string> = [...NDJSON_BOTH_WAYS, "--permission-prompt-tool", "stdio"]
