import { Effect } from "effect"

/**
 * Exit codes: 0 on success and one distinct code per kind of failure, so scripts can tell a bad flag from a
 * budget stop from an API error without parsing text. `--help` prints this table.
 */
export const EXIT_CODES = [
  { code: 0, tags: [], meaning: "success" },
  { code: 1, tags: [], meaning: "an unexpected internal error (a bug: please report it)" },
  {
    code: 2,
    tags: ["UsageError", "ValidationError", "InvalidName", "InvalidSpec", "InvalidSchedule"],
    meaning: "bad command-line input"
  },
  {
    code: 3,
    tags: [
      "ConfigError",
      "ConfigFileError",
      "McpConfigError",
      "DashboardConfigError",
      "OtlpConfigError",
      "ClusterConfigError",
      "WebhooksConfigError",
      "NotifyNotConfigured"
    ],
    meaning: "the config file or an environment variable is invalid (or lacks the section a command needs), or a " +
      "server it asks for cannot listen"
  },
  { code: 4, tags: ["SpawnFailed"], meaning: "claude could not be started" },
  { code: 5, tags: ["TurnFailed"], meaning: "the API answered with an error" },
  { code: 6, tags: ["TurnTimeout"], meaning: "the run timed out and was interrupted" },
  { code: 7, tags: ["MaxTurnsReached"], meaning: "the run hit --max-turns" },
  { code: 8, tags: ["BudgetExceeded"], meaning: "the run hit --max-budget-usd" },
  { code: 9, tags: ["StructuredOutputMissing"], meaning: "--json-schema was given but no structured output came back" },
  {
    code: 10,
    tags: ["TurnInterrupted", "AgentCrashed", "AgentClosed"],
    meaning: "the run was interrupted or claude died"
  },
  { code: 11, tags: ["NotAGitRepo", "WorktreeFailed", "BranchNotFound"], meaning: "a git worktree problem" },
  {
    code: 12,
    tags: [
      "AgentNotFound",
      "AgentAlreadyExists",
      "CannotFork",
      "CannotHibernate",
      "NoResult",
      "TurnPending",
      "RunNotFound",
      "RunNameTaken",
      "NoDiff",
      "ServerUnreachable",
      "NotInStore",
      "SchedulerNotEnabled",
      "RoutineNotFound",
      "RoutineBusy",
      "RoutineRailed",
      "RoutineOffHours",
      "ApprovalNotFound",
      "ApprovalExpired"
    ],
    meaning: "the fleet (or a running `flotta serve`) could not do what was asked"
  },
  {
    code: 13,
    tags: ["StoreLocked", "StoreUnavailable", "StoreSchemaTooNew"],
    meaning: "the store cannot be used: another fleet holds it, or it is unreadable, corrupt or of a newer flotta"
  },
  {
    code: 14,
    tags: ["ChecksFailed", "NoAttemptPassed"],
    meaning: "a check failed (or timed out): `flotta verify`'s, or every attempt's of a run with --check"
  },
  {
    code: 15,
    tags: ["SandboxUnavailable"],
    meaning: "a sandboxed agent or run could not start: the sandbox cannot run here (`flotta doctor` says why)"
  },
  {
    code: 16,
    tags: ["NotificationFailed"],
    meaning: "a notification target did not take `flotta notify test`'s notification"
  },
  {
    code: 17,
    tags: ["Unauthorized"],
    meaning: "a running `flotta serve` refused the token (HTTP 401 or 403): --token, FLOTTA_MCP_TOKEN or mcp.token"
  },
  { code: 130, tags: ["Interrupted"], meaning: "stopped by a signal (Ctrl-C)" }
] as const

/** The exit code for a failure's `_tag`; anything unknown is an internal error. */
export const exitCodeFor = (tag: string | undefined): number =>
  EXIT_CODES.find((entry) => (entry.tags as ReadonlyArray<string>).includes(tag ?? ""))?.code ?? 1

/** The table as `--help` shows it. */
export const describeExitCodes = (): string =>
  EXIT_CODES.map((entry) => `  ${String(entry.code).padStart(3)}  ${entry.meaning}`).join("\n")

/** Servers (serve, mcp, repl) are meant to be stopped by a signal: for them it is a clean exit, not 130. */
let signalIsCleanStop = false
export const signalStopsCleanly = Effect.sync(() => {
  signalIsCleanStop = true
})

/** The exit code for an interruption. */
export const interruptedExitCode = () => (signalIsCleanStop ? 0 : 130)
