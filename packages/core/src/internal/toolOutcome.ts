/**
 * A tool call's outcome, from the CLI's `tool_result` and what the host decided about the call: `ok`, `error`,
 * or `refused` with the reason (not offered, the sandbox, the policy, a human, an approval that ran out), the
 * result's text cut to its bound with the full size kept, and how long the call took.
 */
import type { PermissionRecord, ToolOutcome, ToolRefusal } from "../AgentView.js"
import { TOOL_RESULT_MAX_BYTES } from "../AgentView.js"
import { ENDINGS } from "../Approvals.js"
import * as Protocol from "../ClaudeProtocol.js"

/** The CLI's words for a call to a tool the agent was not given (`--tools`, `--disallowedTools`). */
const NOT_OFFERED = /No such tool available/

const decoder = new TextDecoder()

/** `text` within `max` bytes of UTF-8 (never a broken character), and its full size. */
export const bounded = (text: string, max = TOOL_RESULT_MAX_BYTES) => {
  const bytes = Buffer.byteLength(text)
  if (bytes <= max) return { text, bytes, truncated: false }
  // A cut that splits a character decodes to U+FFFD at the end: drop it.
  const cut = decoder.decode(Buffer.from(text).subarray(0, max)).replace(/\uFFFD$/, "")
  return { text: cut, bytes, truncated: true }
}

/** Why a refused call was refused: the host's decision on it, or the CLI's own words. */
const refusalOf = (text: string, denied: PermissionRecord | undefined): ToolRefusal | undefined => {
  if (denied !== undefined) {
    const message = denied.message ?? text
    if (denied.by === undefined) return { reason: "policy", message }
    if (denied.by === "sandbox") return { reason: "sandbox", message }
    // Ended without a human's decision (`Approvals.ENDINGS`): it ran out of time, or its wait was cut short.
    if (ENDINGS.has(denied.by)) return { reason: "expired", message, by: denied.by }
    return { reason: "human", message, by: denied.by }
  }
  return NOT_OFFERED.test(text) ? { reason: "not_offered", message: text } : undefined
}

/** The host's latest refusal of a call, if it refused it. */
const deniedIn = (permissions: ReadonlyArray<PermissionRecord>, toolUseId: string) => {
  for (let i = permissions.length - 1; i >= 0; i--) {
    const p = permissions[i]!
    if (p.toolUseId === toolUseId && p.decision === "deny") return p
  }
  return undefined
}

/**
 * The outcome of a call, from its `tool_result` block; `permissions` are the turn's decisions so far (the one
 * for this call, when the host was asked, says why it was refused).
 */
export const outcomeOf = (
  block: Protocol.ToolResultBlock,
  permissions: ReadonlyArray<PermissionRecord>,
  durationMs: number
): ToolOutcome => {
  const full = Protocol.toolResultText(block)
  const { bytes, text, truncated } = bounded(full)
  const base = { text, bytes, truncated, durationMs }
  if (block.is_error !== true) return { status: "ok", ...base }
  const refusal = refusalOf(full, deniedIn(permissions, block.tool_use_id))
  return refusal === undefined ? { status: "error", ...base } : { status: "refused", ...base, refusal }
}
