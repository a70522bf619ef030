/**
 * A tool call's outcome as the SDK's `CallToolResult`: a value is structured content plus the same JSON as text;
 * a typed failure is an `isError` result that names the error, gives its message and says what to do, so the
 * model can correct itself. The failure's `structuredContent` is `{ error: { _tag, message } }`, which the
 * advertised output schemas admit (see standardSchema).
 */
import type { CallToolResult } from "@modelcontextprotocol/server"
import type { Failure } from "../Tool.js"

/** What to do about each typed failure, after its message. */
const ADVICE: Record<string, string> = {
  AgentNotFound: "Call flotta_list to see the live agents, or flotta_spawn to start one",
  AgentAlreadyExists: "Pick another name, or flotta_close the existing agent first",
  InvalidName: "Use 1 to 63 characters of a-z, 0-9, '.', '_' or '-', starting with a letter or digit",
  InvalidSpec: "Fix that field and call again",
  SpawnFailed: "Check cwd, model and the claude CLI (its stderr is above), then spawn again",
  SandboxUnavailable: "The fleet's host lacks what the message names: a person must install it there (`flotta " +
    "doctor` checks the sandbox); a sandboxed agent is never started without it",
  TurnTimeout: "Prompt again with a larger turnTimeoutSeconds, or split the task",
  TurnInterrupted: "Prompt the agent again to continue",
  TurnFailed: "The model API failed; try again later with flotta_prompt",
  AgentCrashed: "The agent restarts itself; check flotta_info, then prompt again",
  AgentClosed: "Start a new agent with flotta_spawn (resume its session id to keep the conversation)",
  TurnPending: "Call flotta_wait to wait for it",
  NoResult: "Check the turn ids with flotta_transcript or flotta_status",
  BudgetExceeded: "Raise maxBudgetUsd, or continue with flotta_spawn { resume: sessionId }",
  MaxTurnsReached: "Raise maxTurns, or continue with flotta_spawn { resume: sessionId }",
  NotAGitRepo: "Pass a cwd inside a git repository",
  RunNotFound: "Use the name flotta_run or flotta_verify returned; flotta_list shows runs still going",
  WorktreeFailed: "Check the repository with flotta_worktrees; flotta_gc_worktrees removes stale ones",
  BranchNotFound: "Pass an existing branch or commit",
  StructuredOutputMissing: "Ask for JSON that matches the schema explicitly in the prompt, or drop jsonSchema",
  SchedulerNotEnabled: "Steering needs a fleet with a scheduler: `flotta serve` (or `flotta repl`) with a `schedule` " +
    "section in its config; `flotta mcp` over stdio never runs one",
  InvalidSchedule: "Fix that argument and call again; flotta_schedule_status shows today's windows and the time zone",
  RoutineNotFound: "Call flotta_schedule_status to see the configured routines",
  RoutineBusy: "Wait for the fire in flight (flotta_schedule_status lists it under running), then fire it again",
  RoutineRailed: "Call flotta_resume to lift the daily budget rail, or wait for the next day",
  ApprovalNotFound: "Call flotta_approvals to see the pending approvals and their ids",
  ApprovalExpired: "Nothing is waiting for it any more; flotta_approvals { all: true } shows how it ended. To " +
    "retry the tool call, prompt the agent again"
}

const sentence = (text: string) => (/[.!?]$/.test(text.trimEnd()) ? text.trimEnd() : `${text.trimEnd()}.`)

/** A typed failure as a tool result the model can act on. */
export const errorResult = (error: Failure): CallToolResult => {
  const advice = ADVICE[error._tag]
  const text = `${error._tag}: ${sentence(error.message)}${advice === undefined ? "" : ` ${sentence(advice)}`}`
  return {
    isError: true,
    content: [{ type: "text", text }],
    structuredContent: { error: { _tag: error._tag, message: error.message } }
  }
}

/** A handler's value as a tool result: structured content, and the same JSON as a text block. */
export const successResult = (value: unknown): CallToolResult => ({
  content: [{ type: "text", text: JSON.stringify(value) }],
  structuredContent: value as Record<string, unknown>
})
