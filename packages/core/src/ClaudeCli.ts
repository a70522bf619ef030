/**
 * The seam that says how one `claude` process is started: which executable (config, then FLOTTA_CLAUDE_PATH,
 * then the pinned `@anthropic-ai/claude-code` dependency, then `claude` on PATH), the duplex flags, and the
 * environment. Tests swap it for a fake CLI script.
 */
import { Config, Context, Effect, Layer, Option } from "effect"
import { createRequire } from "node:module"
import * as path from "node:path"

/** The `claude` version flotta is tested against (the pinned dependency). */
export const TESTED_VERSION = "2.1.332"

export interface ClaudeExecutable {
  /** The program to execute. */
  readonly command: string
  /** Arguments placed before the claude flags (a fake CLI script, for example). */
  readonly prefixArgs: ReadonlyArray<string>
  /** Where the executable came from, for `doctor` and error messages. */
  readonly source: "config" | "env" | "dependency" | "path" | "custom"
}

export class ClaudeCli extends Context.Tag("@flotta/core/ClaudeCli")<ClaudeCli, ClaudeExecutable>() {
  /** Resolves the real binary; `configuredPath` wins over everything else. */
  static readonly layer = (configuredPath?: string) => Layer.effect(ClaudeCli, resolve(configuredPath))

  /** Any executable, e.g. `node fake-claude.mjs`. */
  static readonly layerCommand = (command: string, prefixArgs: ReadonlyArray<string> = []) =>
    Layer.succeed(ClaudeCli, { command, prefixArgs, source: "custom" })
}

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
 * The child's environment: the host's, less the parent-session markers, plus the agent's own additions.
 * This is the one place that reads `process.env` whole: a child inherits the host environment by design.
 */
export const childEnv = (extra: Readonly<Record<string, string>> = {}): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !PARENT_SESSION_MARKERS.includes(key)) env[key] = value
  }
  return Object.assign(env, extra)
}
