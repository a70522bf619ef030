/**
 * An agent's options at work (declared in `AgentOptions`): the part of them the store keeps (`StoredOptions`)
 * and gives back after a restart of the host, and the `claude` flags they make.
 */
import { Duration } from "effect"
import * as path from "node:path"
import { keptOf } from "../AgentOptions.js"
import type { AgentOptions, Labels, StoredOptions } from "../AgentOptions.js"
import type { AgentRow, ForkOrigin } from "../AgentView.js"
import * as ClaudeCli from "../ClaudeCli.js"
import * as Permission from "../Permission.js"
import * as Sandbox from "../Sandbox.js"

export type { AgentOptions } from "../AgentOptions.js"

/** The options with these labels instead of theirs (none kept when there are none). */
export const withLabels = (options: AgentOptions, labels: Labels): AgentOptions => {
  const { labels: _labels, ...rest } = options
  return Object.keys(labels).length === 0 ? rest : { ...rest, labels }
}

/** The options an agent can be restarted with, and why it cannot be when it cannot. */
export const storedOptions = (
  options: AgentOptions,
  policy: Permission.Policy,
  cwd: string,
  timeoutMs: number
): { readonly stored: StoredOptions; readonly notRestorable: string | null } => ({
  stored: { ...keptOf(options), cwd, permission: Permission.describe(policy), timeoutMs },
  notRestorable: typeof policy === "function"
    ? "its permission was given as a function, which cannot be stored: spawn it again"
    : null
})

/** The agent options a stored row describes (a permission stored as "function" is never restored). */
export const optionsOf = (row: AgentRow): AgentOptions => {
  const permission = row.options.permission
  return {
    ...keptOf(row.options),
    cwd: row.options.cwd,
    ...(permission === "function" ? {} : { permission }),
    timeout: Duration.millis(row.options.timeoutMs),
    lifecycle: row.lifecycle
  }
}

/**
 * The session flags: resume it, fork it from its origin under its own id (cut at the origin's message when it has
 * one), or start it new.
 */
const sessionFlags = (
  session: { readonly id: string; readonly resume: boolean; readonly fork?: ForkOrigin | undefined }
): ReadonlyArray<string> => {
  if (session.resume) return ["--resume", session.id]
  if (session.fork === undefined) return ["--session-id", session.id]
  const at = session.fork.messageId
  return [
    "--resume",
    session.fork.sessionId,
    "--fork-session",
    "--session-id",
    session.id,
    ...(at === undefined ? [] : ["--resume-session-at", at])
  ]
}

/** The CLI flags for one agent's options (a sandboxed one's `--settings` merged with any among `extraArgs`). */
export const buildArgs = (
  options: AgentOptions,
  permission: Permission.Policy,
  session: { readonly id: string; readonly resume: boolean; readonly fork?: ForkOrigin | undefined }
): ReadonlyArray<string> => {
  const sandbox = Sandbox.confinement(options.sandbox, path.resolve(options.cwd ?? "."))
  return [
    ...ClaudeCli.DUPLEX_FLAGS,
    ...sessionFlags(session),
    ...(options.model === undefined ? [] : ["--model", options.model]),
    ...(options.systemPrompt === undefined ? [] : ["--system-prompt", options.systemPrompt]),
    ...(options.appendSystemPrompt === undefined ? [] : ["--append-system-prompt", options.appendSystemPrompt]),
    ...(options.stream === true ? ["--include-partial-messages"] : []),
    ...Permission.flags(permission, sandbox === null ? [] : Sandbox.GUARDED_TOOLS),
    ...(sandbox === null ? options.extraArgs ?? [] : Sandbox.settingsArgs(sandbox, options.extraArgs ?? []))
  ]
}
