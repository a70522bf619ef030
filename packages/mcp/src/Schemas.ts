/**
 * The tools' arguments and results, as Effect Schemas. Arguments are strict (a misspelt field is an error that
 * names it); results describe what the engine returns and tolerate fields added later.
 */
import * as Options from "@flotta/core/AgentOptions"
import { PermissionData } from "@flotta/core/Permission"
import { SandboxData } from "@flotta/core/Sandbox"
import { Schema } from "effect"
import { opt, req } from "./Results.js"

export * from "./Results.js"

// --- arguments ---------------------------------------------------------------------------------------------

const Text = Schema.String.pipe(Schema.minLength(1))

const Seconds = Schema.Number.pipe(Schema.positive(), Schema.finite())
const Count = Schema.Number.pipe(Schema.int(), Schema.positive())

export const NAME_DESCRIPTION =
  "The agent's (or run's) name: 1 to 63 characters of a-z, 0-9, '.', '_' or '-', starting with a letter or digit"

/** A bounded wait: MCP clients give up on a call after about 60 s, so one call waits at most 50 s. */
export const MAX_WAIT_SECONDS = 50
export const DEFAULT_WAIT_SECONDS = 45

const WaitSeconds = Schema.Number.pipe(Schema.between(0, MAX_WAIT_SECONDS))
const WAIT_DESCRIPTION = `How long this call waits, in seconds (default ${DEFAULT_WAIT_SECONDS}, at most ` +
  `${MAX_WAIT_SECONDS}); when it expires the call returns done: false, and flotta_wait waits again`
const TURN_TIMEOUT_DESCRIPTION =
  "The turn's own time limit in seconds; when it expires the turn is interrupted (TurnTimeout)"

const Permission = PermissionData
const PERMISSION_DESCRIPTION = "\"read_only\" (Read, Glob, Grep), \"full\", { \"allow\": [tool names or rules " +
  "like \"Bash(git *)\"] }, { \"allow\": [...], \"ask\": [tools that wait for a human's approval] }, or \"ask\" " +
  "(read-only tools are allowed, every other tool waits for a human; see flotta_approvals)"

const Env = Schema.Record({ key: Schema.String, value: Schema.String })
const SANDBOX_DESCRIPTION = "Run its Bash in the claude CLI's OS sandbox: true writes only in its cwd (a run's " +
  "worktree) and reaches no network; { \"network\": { \"allow\": [hosts such as \"github.com\", \"*.github.com\", " +
  "\"127.0.0.1:8080\"] }, \"writable\": [absolute paths, or relative to cwd] } adds hosts and paths. Write, Edit " +
  "and WebFetch are held to the same paths and hosts. It narrows the permission, never widens it; a machine " +
  "without the sandbox (bubblewrap and socat on Linux) fails with SandboxUnavailable instead of starting it"
const CWD_DESCRIPTION = "Working directory (default: the server's)"
const REPO_DESCRIPTION = "A directory inside the git repository (default: the server's working directory)"

export const NameArgs = Schema.Struct({ name: req(Text, NAME_DESCRIPTION) })

const STREAM_DESCRIPTION = "Stream its text as the model writes it: subscribers of the report log (and the " +
  "dashboard) get each piece as a text_delta entry, told live and never kept"
const AUTO_COMPACT_DESCRIPTION = "A percentage of its context window: when a turn ends with its context fuller " +
  "than that, a compaction is queued before its next prompt (default: the fleet's autoCompactAt, if any)"

const LABELS_FILTER = "Only those with every one of these labels ({ \"team\": \"a\" })"
const LABELS_DESCRIPTION = "Labels ({ \"team\": \"a\" }), kept with it and the cost of its turns: flotta_costs " +
  "groups spend by one (by: \"label:team\"), flotta_list and flotta_runs filter by them"

/**
 * The agent options as the tools take them: core's Schema of them (`AgentOptions`), field by field, each with the
 * words a client reads. The timeout is said as `turnTimeoutSeconds`; `lifecycle` is the tool's own choice (spawn
 * starts sessions, flotta_run runs) and `extraArgs` stays out of reach (a CLI flag could widen the permission).
 */
const O = Options.AgentOptions.fields
const OptionFields = {
  cwd: O.cwd.annotations({ description: CWD_DESCRIPTION }),
  model: O.model.annotations({ description: "Model name or alias, e.g. \"sonnet\" (default: the CLI's)" }),
  permission: O.permission.annotations({ description: PERMISSION_DESCRIPTION }),
  systemPrompt: O.systemPrompt.annotations({ description: "Replaces the default system prompt" }),
  appendSystemPrompt: O.appendSystemPrompt.annotations({ description: "Appended to the default system prompt" }),
  env: O.env.annotations({ description: "Added to the agent's environment" }),
  role: O.role,
  resume: O.resume.annotations({ description: "A session id to continue (from a run's result or an agent's info)" }),
  expectStructuredOutput: O.expectStructuredOutput.annotations({
    description: "A turn that succeeds without structured output fails"
  }),
  sandbox: O.sandbox.annotations({ description: SANDBOX_DESCRIPTION }),
  autoCompactAt: O.autoCompactAt.annotations({ description: AUTO_COMPACT_DESCRIPTION }),
  stream: O.stream.annotations({ description: STREAM_DESCRIPTION }),
  maxBudgetUsd: O.maxBudgetUsd.annotations({
    description: "A budget in dollars for its turns (per budgetPer): once spent, a new turn fails with BudgetExceeded"
  }),
  budgetPer: O.budgetPer.annotations({ description: "The budget is per UTC day, or for its life (default)" }),
  labels: O.labels.annotations({ description: LABELS_DESCRIPTION }),
  turnTimeoutSeconds: opt(Seconds, TURN_TIMEOUT_DESCRIPTION)
}

// Every agent option is a tool argument, or said here why not: a new option fails the build until it is.
const everyOptionIsAnArgument: Options.SameKeys<
  Omit<Options.DataOptions, "timeout" | "lifecycle" | "extraArgs">,
  Omit<typeof OptionFields, "turnTimeoutSeconds">
> = true
void everyOptionIsAnArgument

/** The options an agent starts with (a fork takes the ones it is not given from its source, and its session). */
const { resume: _resume, ...AgentOptionFields } = OptionFields

export const CompactArgs = Schema.Struct({
  name: req(Text, NAME_DESCRIPTION),
  instructions: opt(Text, "What the summary must keep (\"keep the open questions\")"),
  timeoutSeconds: opt(WaitSeconds, WAIT_DESCRIPTION)
})

export const ClearArgs = Schema.Struct({
  name: req(Text, NAME_DESCRIPTION),
  timeoutSeconds: opt(WaitSeconds, WAIT_DESCRIPTION)
})

export const ForkArgs = Schema.Struct({
  source: req(Text, "The session agent to fork"),
  name: req(Text, "The fork's name. " + NAME_DESCRIPTION),
  at: opt(
    Text,
    "The source's turn to cut at (t1, t2, ...): the fork has the conversation up to and including it (default: " +
      "the source's last turn that succeeded)"
  ),
  ...AgentOptionFields,
  host: opt(Text, "In a cluster: the host to run the fork on (default: the source's)")
})

export const SpawnArgs = Schema.Struct({
  name: req(Text, NAME_DESCRIPTION),
  ...OptionFields,
  permission: O.permission.annotations({ description: PERMISSION_DESCRIPTION + " (default \"read_only\")" }),
  turnTimeoutSeconds: opt(Seconds, TURN_TIMEOUT_DESCRIPTION + " (default 180)"),
  host: opt(Text, "In a cluster: the host to run it on (default: the live host with the fewest agents)")
})

export const RunArgs = Schema.Struct({
  prompt: opt(Text, "The task (required unless the template has one)"),
  name: opt(Text, "The run's name (generated when absent); " + NAME_DESCRIPTION),
  template: opt(Text, "A `run` entry of the configured fleet to start from"),
  cwd: opt(Text, CWD_DESCRIPTION),
  model: opt(Text, "Model name or alias"),
  permission: opt(Permission, PERMISSION_DESCRIPTION),
  systemPrompt: opt(Schema.String),
  appendSystemPrompt: opt(Schema.String),
  worktree: opt(
    Schema.Union(Schema.Boolean, Text),
    "true isolates the run in its own git worktree (a string names it)"
  ),
  cleanup: opt(Schema.Boolean, "After a successful run, commit its changes and remove the worktree (the branch stays)"),
  jsonSchema: opt(
    Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
      jsonSchema: { type: "object", additionalProperties: true }
    }),
    "A JSON Schema the result's structuredOutput must conform to"
  ),
  maxTurns: opt(Count, "Model calls at most"),
  maxBudgetUsd: opt(Seconds, "Spend at most this many dollars"),
  labels: OptionFields.labels,
  timeoutSeconds: opt(Seconds, "The run is interrupted after this long"),
  env: opt(Env, "Added to the run's environment"),
  sandbox: opt(SandboxData, SANDBOX_DESCRIPTION),
  attempts: opt(
    Schema.Number.pipe(Schema.int(), Schema.between(1, 16)),
    "Best of N: this many attempts at once, each in its own worktree, each told its number (FLOTTA_ATTEMPT in its " +
      "environment, {{attempt}} in the prompt); the winner is picked among those that pass `verify`"
  ),
  pick: opt(
    Schema.Literal("first", "cheapest"),
    "first (default): the first attempt to pass wins, the rest are interrupted; cheapest: all finish, the cheapest " +
      "that passed wins"
  ),
  verify: opt(
    Schema.Struct({
      checks: req(Schema.Array(Text).pipe(Schema.minItems(1)), "Shell commands run in the attempt's worktree"),
      checkTimeoutSeconds: opt(Seconds, "Per check (default 600)")
    }),
    "Checks each attempt must pass once its turn succeeds (NoAttemptPassed when none does)"
  ),
  keepAll: opt(Schema.Boolean, "Keep every attempt's worktree (by default the losers' go, their work on their branch)")
})

export const PromptArgs = Schema.Struct({
  name: req(Text, NAME_DESCRIPTION),
  text: req(Text, "The prompt"),
  turnTimeoutSeconds: opt(Seconds, TURN_TIMEOUT_DESCRIPTION)
})

export const AskArgs = Schema.Struct({
  name: req(Text, NAME_DESCRIPTION),
  text: req(Text, "The prompt"),
  timeoutSeconds: opt(WaitSeconds, WAIT_DESCRIPTION),
  turnTimeoutSeconds: opt(Seconds, TURN_TIMEOUT_DESCRIPTION)
})

export const WaitArgs = Schema.Struct({
  name: req(Text, NAME_DESCRIPTION),
  turnId: opt(Text, "The turn to wait for (from flotta_prompt or flotta_ask); default: the agent's latest turn"),
  run: opt(Schema.Boolean, "Wait for the run (or verify) named `name` instead of an agent's turn"),
  timeoutSeconds: opt(WaitSeconds, WAIT_DESCRIPTION)
})

export const ResultArgs = Schema.Struct({
  name: req(Text, NAME_DESCRIPTION),
  turnId: opt(Text, "The turn id, or \"latest\" (default): the last finished turn")
})

export const TranscriptArgs = Schema.Struct({
  name: req(Text, NAME_DESCRIPTION),
  last: opt(Count, "Only the last N turns")
})

export const BroadcastArgs = Schema.Struct({
  text: req(Text, "The prompt sent to every live agent"),
  timeoutSeconds: opt(WaitSeconds, WAIT_DESCRIPTION),
  turnTimeoutSeconds: opt(Seconds, TURN_TIMEOUT_DESCRIPTION)
})

export const VerifyArgs = Schema.Struct({
  branch: req(Text, "The branch (or commit) to check out in a throwaway worktree"),
  checks: req(Schema.Array(Text).pipe(Schema.minItems(1)), "Shell commands; each must exit 0"),
  cwd: opt(Text, REPO_DESCRIPTION),
  name: opt(Text, "The verify's name (generated when absent)"),
  checkTimeoutSeconds: opt(Seconds, "Per check (default 600)")
})

export const ReportsArgs = Schema.Struct({
  cursor: opt(
    Schema.Number.pipe(Schema.int(), Schema.nonNegative()),
    "Entries after this sequence number: pass the `next` of the previous call (default 0: from the start)"
  ),
  agent: opt(Text, "Only this agent's (or run's) entries"),
  kinds: opt(
    Schema.Array(Text),
    "Only these kinds: spawned, turn_started, result, error, closed, crashed, restarted, permission, ..."
  ),
  limit: opt(Schema.Number.pipe(Schema.int(), Schema.between(1, 10_000)), "At most this many entries (default 100)")
})

export const RunsArgs = Schema.Struct({
  state: opt(Schema.Literal("running", "succeeded", "failed"), "Only the runs in this state"),
  limit: opt(Schema.Number.pipe(Schema.int(), Schema.between(1, 10_000)), "At most this many, newest first"),
  labels: opt(Options.Labels, LABELS_FILTER)
})

export const ListArgs = Schema.Struct({ labels: opt(Options.Labels, LABELS_FILTER) })

export const CwdArgs = Schema.Struct({ cwd: opt(Text, REPO_DESCRIPTION) })

export const GcArgs = Schema.Struct({
  cwd: opt(Text, REPO_DESCRIPTION),
  force: opt(
    Schema.Boolean,
    "Remove worktrees with uncommitted changes too: their work is committed to their branch first"
  ),
  discard: opt(
    Schema.Boolean,
    "With force: remove them without committing, dropping their uncommitted changes (named in `discarded`)"
  )
})

export const NoArgs = Schema.Struct({})

export const UnparkArgs = Schema.Struct({
  agent: opt(Text, "Only this agent (the rest of its credentials' group stays parked); default: every parked agent")
})
