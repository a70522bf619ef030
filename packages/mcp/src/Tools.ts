/**
 * The fleet's MCP tools, as data: one table of tools (name, title, description, hints, input and output
 * Schemas), each handled by an Effect on the `Flotta` service. Long waits are bounded and report progress;
 * giving up on one never cancels the work. `ToolBridge` serves the table on an SDK server.
 */
import { Flotta } from "@flotta/core/Flotta"
import * as Operations from "@flotta/core/Operations"
import type * as Run from "@flotta/core/Run"
import { Effect, Schema } from "effect"
import * as ApprovalTools from "./ApprovalTools.js"
import * as CostTools from "./CostTools.js"
import * as ToolWait from "./internal/toolWait.js"
import * as Wait from "./internal/wait.js"
import * as SchedulerTools from "./SchedulerTools.js"
import * as S from "./Schemas.js"
import * as SessionTools from "./SessionTools.js"
import * as Tool from "./Tool.js"
import * as WorktreeTools from "./WorktreeTools.js"

// Hints: `readOnlyHint` lets hosts auto-approve; `destructiveHint` asks them to confirm; `openWorldHint` marks
// tools that prompt a model (which may reach beyond this machine).
const READ = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const
const PROMPTS = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true } as const
const STOPS = { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false } as const

/** How often a wait reports progress. */
export const PROGRESS_INTERVAL = Wait.PROGRESS_INTERVAL

const seconds = Wait.seconds

/** A turn's own time limit, when the call sets one. */
const turnTimeout = (turnTimeoutSeconds: number | undefined) =>
  turnTimeoutSeconds === undefined ? {} : { timeout: seconds(turnTimeoutSeconds) }

/** Queues a prompt for an agent, under the call's own turn time limit if it sets one; its turn id. */
const promptTurn = (fleet: Flotta, name: string, text: string, turnTimeoutSeconds: number | undefined) =>
  fleet.prompt(name, text, turnTimeout(turnTimeoutSeconds))

const startedView = (name: string, kind: "run" | "verify") => ({
  name,
  kind,
  status: "running" as const,
  next: `call flotta_wait { "name": "${name}", "run": true } to wait for it, or flotta_run_result { "name": "${name}" }`
})

const runOptions = (args: typeof S.RunArgs.Type): Run.RunOptions => {
  const { timeoutSeconds, verify, ...rest } = args
  return {
    ...rest,
    ...(timeoutSeconds === undefined ? {} : { timeout: seconds(timeoutSeconds) }),
    ...(verify === undefined ? {} : {
      verify: {
        checks: verify.checks,
        ...(verify.checkTimeoutSeconds === undefined ? {} : { timeout: seconds(verify.checkTimeoutSeconds) })
      }
    })
  }
}

/** Every tool, in the order `tools/list` gives them. */
export const tools: ReadonlyArray<Tool.Tool> = [
  Tool.make({
    name: Operations.toolName("spawn"),
    title: "Spawn an agent",
    description: "Start a long-lived claude agent under a unique name and return its info once it is ready. " +
      "Send it work with flotta_prompt or flotta_ask; stop it with flotta_close. Tools under the permission's " +
      "`ask` wait for flotta_decide (see flotta_approvals).",
    annotations: { ...PROMPTS },
    input: S.SpawnArgs,
    output: S.AgentInfo,
    run: ({ name, turnTimeoutSeconds, ...options }) =>
      Effect.flatMap(Flotta, (fleet) => fleet.spawn(name, { ...options, ...turnTimeout(turnTimeoutSeconds) }))
  }),
  // A session's own life beyond its turns: fork, compact, clear, hibernate, wake.
  ...SessionTools.tools,
  Tool.make({
    name: "flotta_run",
    title: "Start a run",
    description: "Start a single-shot agent on one bounded task (optionally in its own git worktree) and " +
      "return its name at once. Wait for it with flotta_wait { name, run: true }, or fetch the outcome with " +
      "flotta_run_result. With `attempts`, N attempts run at once, each verified by `verify`'s checks in its own " +
      "worktree, and the outcome is the winner's with every attempt's report (NoAttemptPassed when none passes). " +
      "Tools under the permission's `ask` wait for flotta_decide (see flotta_approvals).",
    annotations: { ...PROMPTS },
    input: S.RunArgs,
    output: S.Started,
    run: (args) =>
      Effect.map(
        Effect.flatMap(Flotta, (fleet) => fleet.runAsync(runOptions(args))),
        (name) => startedView(name, "run")
      )
  }),
  Tool.make({
    name: Operations.toolName("list"),
    title: "List agents",
    description: "Every live agent (runs in progress included) with its status, current turn and totals.",
    annotations: READ,
    input: S.ListArgs,
    output: Schema.Struct({ agents: Schema.Array(S.AgentInfo) }),
    run: (query) => Effect.map(Effect.flatMap(Flotta, (fleet) => fleet.list(query)), (agents) => ({ agents }))
  }),
  Tool.fromOperation("info", { title: "Agent info", annotations: READ }),
  Tool.fromOperation("label", {
    title: "Label an agent",
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false }
  }),
  Tool.make({
    name: Operations.toolName("close"),
    title: "Close an agent",
    description: "Stop an agent: its queued and running turns fail with AgentClosed and its process ends.",
    annotations: STOPS,
    input: S.NameArgs,
    output: Schema.Struct({ name: Schema.String, closed: Schema.Boolean }),
    run: ({ name }) => Effect.flatMap(Flotta, (fleet) => fleet.close(name)).pipe(Effect.as({ name, closed: true }))
  }),
  Tool.make({
    name: Operations.toolName("interrupt"),
    title: "Interrupt a turn",
    description: "Interrupt the agent's turn in flight (it fails with TurnInterrupted); queued turns go on. " +
      "interrupted is false when nothing was running.",
    annotations: STOPS,
    input: S.NameArgs,
    output: Schema.Struct({ name: Schema.String, interrupted: Schema.Boolean, turnId: Schema.NullOr(Schema.String) }),
    run: ({ name }) =>
      Effect.gen(function*() {
        const fleet = yield* Flotta
        const { current } = yield* fleet.status(name)
        const interrupted = yield* fleet.interrupt(name)
        return { name, interrupted, turnId: interrupted ? current : null }
      })
  }),
  Tool.make({
    name: Operations.toolName("unpark"),
    title: "Unpark agents",
    description: "At a usage limit the fleet parks every agent on the same credentials until the limit resets " +
      "(status parked, parkedUntil); queued turns wait. Unpark now: one agent (agent), or every parked agent " +
      "(staggered). A parked turn then resumes with a short continuation, and its answer is that turn's result. " +
      "Returns the agents that resume and what stays parked.",
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    input: S.UnparkArgs,
    output: Schema.Struct({ unparked: Schema.Array(Schema.String), parking: Schema.Array(S.ParkedGroup) }),
    run: ({ agent }) =>
      Effect.gen(function*() {
        const fleet = yield* Flotta
        const { unparked } = yield* fleet.unpark(agent === undefined ? {} : { agent })
        return { unparked, parking: yield* fleet.parking }
      })
  }),
  Tool.make({
    name: Operations.toolName("prompt"),
    title: "Prompt an agent",
    description: "Queue a prompt for an agent and return its turn id at once. Wait for the reply with " +
      "flotta_wait { name, turnId }, or read it later with flotta_result.",
    annotations: { ...PROMPTS },
    input: S.PromptArgs,
    output: Schema.Struct({ name: Schema.String, turnId: Schema.String, status: S.StatusView }),
    run: ({ name, text, turnTimeoutSeconds }) =>
      Effect.gen(function*() {
        const fleet = yield* Flotta
        const turnId = yield* promptTurn(fleet, name, text, turnTimeoutSeconds)
        return { name, turnId, status: yield* fleet.status(name) }
      })
  }),
  Tool.make({
    name: Operations.toolName("ask"),
    title: "Ask an agent",
    description: "Prompt an agent and wait for the reply, at most timeoutSeconds (default 45, at most 50), " +
      "with progress notifications. If the turn is still going, returns done: false with its turn id: call " +
      "flotta_wait again. Giving up on the call never cancels the turn (flotta_interrupt does).",
    annotations: { ...PROMPTS },
    input: S.AskArgs,
    output: S.WaitResult,
    run: ({ name, text, timeoutSeconds, turnTimeoutSeconds }, ctx) =>
      Effect.gen(function*() {
        const fleet = yield* Flotta
        const turnId = yield* promptTurn(fleet, name, text, turnTimeoutSeconds)
        return yield* ToolWait.waitTurn(fleet, name, turnId, timeoutSeconds, ctx)
      })
  }),
  Tool.make({
    name: Operations.toolName("wait"),
    title: "Wait for a turn or a run",
    description: "Wait for an agent's turn (turnId, default its latest) or for a run or verify (run: true), at " +
      "most timeoutSeconds (default 45, at most 50), with progress notifications every few seconds. Returns " +
      "the result when done, else done: false and the status: call again. Cancelling the wait never cancels " +
      "the turn or run.",
    annotations: READ,
    input: S.WaitArgs,
    output: S.WaitResult,
    run: ({ name, run, timeoutSeconds, turnId }, ctx) =>
      Effect.gen(function*() {
        const fleet = yield* Flotta
        if (run === true) return yield* ToolWait.waitRun(fleet, name, timeoutSeconds, ctx)
        if (turnId !== undefined) return yield* ToolWait.waitTurn(fleet, name, turnId, timeoutSeconds, ctx)
        // No turn named: a run of that name, else the agent's latest turn.
        if (run === undefined && (yield* ToolWait.isRun(fleet, name))) {
          return yield* ToolWait.waitRun(fleet, name, timeoutSeconds, ctx)
        }
        const latest = yield* ToolWait.latestTurn(fleet, name)
        return yield* ToolWait.waitTurn(fleet, name, latest, timeoutSeconds, ctx)
      })
  }),
  Tool.make({
    name: Operations.toolName("status"),
    title: "Agent status",
    description: "An agent's status (starting, idle, working, waiting_approval, parked, restarting, hibernated, " +
      "closed), its turn in flight, how many turns are queued and how many finished; parkedUntil while parked at " +
      "a usage limit.",
    annotations: READ,
    input: S.NameArgs,
    output: Schema.Struct({ name: Schema.String, ...S.StatusView.fields }),
    run: ({ name }) =>
      Effect.map(Effect.flatMap(Flotta, (fleet) => fleet.status(name)), (status) => ({ name, ...status }))
  }),
  Tool.make({
    name: Operations.toolName("result"),
    title: "Turn result",
    description: "The result of a finished turn (turnId, or \"latest\"): reply text, cost, duration, session. " +
      "A turn still going is a TurnPending error: use flotta_wait.",
    annotations: READ,
    input: S.ResultArgs,
    output: Schema.Struct({ name: Schema.String, result: S.TurnResult }),
    run: ({ name, turnId }) =>
      Effect.map(
        Effect.flatMap(Flotta, (fleet) => fleet.result(name, turnId ?? "latest")),
        (result) => ({ name, result })
      )
  }),
  Tool.make({
    name: Operations.toolName("runResult"),
    title: "Run result",
    description: "The outcome of a run (flotta_run) or verify (flotta_verify) by name. One still going is a " +
      "TurnPending error: use flotta_wait { name, run: true }.",
    annotations: READ,
    input: S.NameArgs,
    output: Schema.Struct({
      name: Schema.String,
      kind: Schema.Literal("run", "verify"),
      result: Schema.Union(S.RunResult, S.VerifyReport)
    }),
    run: ({ name }) =>
      Effect.map(
        Effect.flatMap(Flotta, (fleet) => fleet.runResult(name)),
        (result) => ({ name, kind: result.kind, result })
      )
  }),
  Tool.make({
    name: Operations.toolName("runs"),
    title: "List runs",
    description: "The async runs (flotta_run) and verifies (flotta_verify), running and finished, newest first: " +
      "state, start and end, cost, worktree and branch, and the error's tag when one failed. Fetch one's whole " +
      "outcome with flotta_run_result.",
    annotations: READ,
    input: S.RunsArgs,
    output: Schema.Struct({ runs: Schema.Array(S.RunView) }),
    run: (query) => Effect.map(Effect.flatMap(Flotta, (fleet) => fleet.runs(query)), (runs) => ({ runs }))
  }),
  Tool.fromOperation("diff", { title: "Run diff", annotations: READ }),
  Tool.make({
    name: Operations.toolName("transcript"),
    title: "Agent transcript",
    description: "An agent's turns, oldest first: prompt, reply or error, tool calls with their outcome (ok, " +
      "error, or refused and why: not_offered, sandbox, policy, human with who, expired; the result's text cut " +
      "to 4 KiB with its full size in bytes; how long the call took), permission decisions, cost and timing. " +
      "`last` keeps only the most recent ones. A closed agent's transcript is read from the store (until " +
      "retention removes it), marked `closed` with why and when. Also readable as the resource " +
      "flotta://agents/{name}/transcript.",
    annotations: READ,
    input: S.TranscriptArgs,
    output: Schema.Struct({
      name: Schema.String,
      total: Schema.Number,
      turns: Schema.Array(S.TurnRecord),
      closed: S.opt(S.Closed, "Present when the agent is closed: why, and when")
    }),
    run: ({ last, name }) =>
      Effect.gen(function*() {
        const fleet = yield* Flotta
        const turns = yield* fleet.transcript(name)
        // Whether it is closed: its info says (it may close, or its record go, in between: then it is not marked).
        const info = yield* Effect.option(fleet.info(name))
        const closed = info._tag === "Some" && info.value.status === "closed" ? info.value : undefined
        return {
          name,
          total: turns.length,
          turns: last === undefined ? turns : turns.slice(-last),
          ...(closed === undefined ? {} : {
            closed: {
              reason: closed.closedReason ?? "closed",
              ...(closed.closedAt === undefined ? {} : { at: closed.closedAt })
            }
          })
        }
      })
  }),
  Tool.make({
    name: Operations.toolName("broadcast"),
    title: "Broadcast a prompt",
    description: "Send one prompt to every live agent and wait for the replies, at most timeoutSeconds " +
      "(default 45, at most 50). Each agent's entry is its reply, its error, or done: false with the turn id to " +
      "flotta_wait for. One slow or failing agent never holds up the others.",
    annotations: { ...PROMPTS },
    input: S.BroadcastArgs,
    output: S.BroadcastResult,
    run: ({ text, timeoutSeconds, turnTimeoutSeconds }, ctx) =>
      Effect.gen(function*() {
        const fleet = yield* Flotta
        const names = (yield* fleet.list()).filter((a) => a.status !== "closed").map((a) => a.name)
        const prompt = (name: string) => promptTurn(fleet, name, text, turnTimeoutSeconds)
        return yield* ToolWait.waitBroadcast(fleet, names, prompt, timeoutSeconds, ctx)
      })
  }),
  Tool.make({
    name: "flotta_verify",
    title: "Verify a branch",
    description: "Run shell checks against a branch in a throwaway git worktree, in the background; returns " +
      "its name at once. Wait with flotta_wait { name, run: true } or fetch with flotta_run_result.",
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    input: S.VerifyArgs,
    output: S.Started,
    run: ({ branch, checkTimeoutSeconds, checks, cwd, name }) =>
      Effect.gen(function*() {
        const fleet = yield* Flotta
        const started = yield* fleet.verifyAsync(cwd ?? ".", {
          branch,
          checks,
          ...(name === undefined ? {} : { name }),
          ...(checkTimeoutSeconds === undefined ? {} : { timeout: seconds(checkTimeoutSeconds) })
        })
        return startedView(started, "verify")
      })
  }),
  Tool.make({
    name: "flotta_reports",
    title: "Report log",
    description: "The fleet's activity log by cursor: entries after `cursor` (pass the previous call's `next`), " +
      "optionally for one agent and some kinds. Also readable as the resource flotta://reports.",
    annotations: READ,
    input: S.ReportsArgs,
    output: Schema.Struct({ entries: Schema.Array(S.ReportEntry), next: Schema.Number }),
    run: ({ agent, cursor, kinds, limit }) =>
      Effect.flatMap(Flotta, (fleet) =>
        fleet.reports({
          ...(cursor === undefined ? {} : { since: cursor }),
          ...(agent === undefined ? {} : { agent }),
          ...(kinds === undefined ? {} : { kinds }),
          ...(limit === undefined ? {} : { limit })
        }))
  }),
  // The cost console: spend by agent, run, routine, model, day or hour.
  ...CostTools.tools,
  // The run worktrees of a repository, and removing the finished ones.
  ...WorktreeTools.tools,
  // Steering the scheduler (SchedulerNotEnabled when the fleet runs none).
  ...SchedulerTools.tools,
  // Human approvals: what waits for a person, and their decision.
  ...ApprovalTools.tools
]

export const byName: ReadonlyMap<string, Tool.Tool> = new Map(tools.map((spec) => [spec.name, spec]))
