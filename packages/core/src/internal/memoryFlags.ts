/**
 * The flags the in-memory CLI acts on, read from a process's argv (the rest are accepted and ignored, as many are
 * by the real one), and the sandbox its `--settings` turn on.
 */
import { Option, Schema } from "effect"

export interface Flags {
  /** The session this process writes: the one it resumes, the fork's own, or a new one. */
  readonly sessionId: string
  /** It continues `sessionId`'s conversation. */
  readonly resume: boolean
  /** `--resume S --fork-session`: it starts with S's conversation (cut after the message `at`, when given). */
  readonly fork: { readonly sessionId: string; readonly at: string | undefined } | null
  readonly model: string | null
  /** `--tools`: the tools offered (undefined: all). */
  readonly tools: ReadonlyArray<string> | undefined
  readonly allowedTools: ReadonlyArray<string>
  readonly maxTurns: number | undefined
  readonly maxBudgetUsd: number | undefined
  readonly jsonSchema: boolean
  /** `--settings`'s sandbox, when it turns the sandbox on (writable paths without the cwd). */
  readonly sandbox: { readonly allowWrite: ReadonlyArray<string>; readonly hosts: ReadonlyArray<string> } | null
  /** `--include-partial-messages`: text deltas stream before each text message. */
  readonly partial: boolean
}

const Strings = Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] })

/** The part of `--settings` that turns the sandbox on, as the CLI reads it. */
const SandboxSettings = Schema.parseJson(Schema.Struct({
  sandbox: Schema.Struct({
    enabled: Schema.Literal(true),
    filesystem: Schema.optionalWith(Schema.Struct({ allowWrite: Strings }), { default: () => ({ allowWrite: [] }) }),
    network: Schema.optionalWith(Schema.Struct({ allowedDomains: Strings }), {
      default: () => ({ allowedDomains: [] })
    })
  })
}))
const decodeSettings = Schema.decodeUnknownOption(SandboxSettings)

/** The sandbox a `--settings` value turns on (none: it is off, or the value says nothing the CLI reads). */
const sandboxOf = (settings: string | undefined): Flags["sandbox"] =>
  settings === undefined ? null : Option.match(decodeSettings(settings), {
    onNone: () => null,
    onSome: ({ sandbox }) => ({ allowWrite: sandbox.filesystem.allowWrite, hosts: sandbox.network.allowedDomains })
  })

const list = (value: string | undefined) =>
  value === undefined ? [] : value.split(",").map((s) => s.trim()).filter((s) => s.length > 0)

/** The flags the in-memory CLI acts on (the rest are accepted and ignored, as many are by the real one). */
export const parseFlags = (args: ReadonlyArray<string>): Flags => {
  const value = (flag: string) => {
    const i = args.lastIndexOf(flag)
    return i === -1 ? undefined : args[i + 1]
  }
  const resume = value("--resume")
  const tools = value("--tools")
  const maxTurns = value("--max-turns")
  const maxBudget = value("--max-budget-usd")
  const forking = resume !== undefined && args.includes("--fork-session")
  return {
    sessionId: (forking ? value("--session-id") : resume ?? value("--session-id")) ?? "",
    resume: resume !== undefined && !forking,
    fork: forking ? { sessionId: resume, at: value("--resume-session-at") } : null,
    model: value("--model") ?? null,
    tools: tools === undefined ? undefined : list(tools),
    allowedTools: list(value("--allowedTools")),
    maxTurns: maxTurns === undefined ? undefined : Number(maxTurns),
    maxBudgetUsd: maxBudget === undefined ? undefined : Number(maxBudget),
    jsonSchema: args.includes("--json-schema"),
    sandbox: sandboxOf(value("--settings")),
    partial: args.includes("--include-partial-messages")
  }
}
