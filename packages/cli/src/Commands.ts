/**
 * The commands by name, each with a one-line summary and the module it lives in, loaded only when it runs: a
 * command pays for what it uses (`flotta list` loads no engine, `flotta --version` loads nothing of the tree).
 * `Main` reads this table; `Cli` holds the whole tree (for completion and the reference), and a test keeps the two
 * the same. Nothing here may import a command module.
 */
import { VARIABLES } from "./Environment.js"

/** A command's loaded module, as `Main` needs it: the command values it declares. */
type Loaded = Promise<ReadonlyArray<unknown> | unknown>

export interface Entry {
  readonly name: string
  readonly summary: string
  /** The module's command (or its commands, of which `Main` takes the one of this name). */
  readonly load: () => Loaded
}

const client = () => import("./ClientCommands.js").then((m) => m.commands)
const agents = () => import("./AgentCommands.js").then((m) => m.commands)
const sessions = () => import("./SessionCommands.js").then((m) => m.commands)
const runs = () => import("./RunsCommands.js").then((m) => m.commands)
const worktrees = () => import("./WorktreeCommands.js").then((m) => m.commands)
const schedule = () => import("./ScheduleCommands.js").then((m) => m.commands)
const approvals = () => import("./ApprovalCommands.js").then((m) => m.commands)

/** The groups `flotta --help` shows, in order, each with its commands. */
export const GROUPS: ReadonlyArray<{ readonly title: string; readonly entries: ReadonlyArray<Entry> }> = [
  {
    title: "Run one task",
    entries: [
      {
        name: "run",
        summary: "run one task with a single-shot agent and print the answer",
        load: () => import("./RunCommand.js").then((m) => m.command)
      }
    ]
  },
  {
    title: "Host the fleet",
    entries: [
      {
        name: "serve",
        summary: "boot the configured fleet with its servers, until Ctrl-C",
        load: () => import("./ServeCommand.js").then((m) => m.command)
      },
      {
        name: "repl",
        summary: "a Node REPL with the live fleet as `fleet`",
        load: () => import("./ReplCommand.js").then((m) => m.command)
      },
      {
        name: "mcp",
        summary: "the fleet's MCP tools over stdio",
        load: () => import("./McpCommand.js").then((m) => m.command)
      }
    ]
  },
  {
    title: "Drive a running serve",
    entries: [
      { name: "list", summary: "the live agents", load: client },
      { name: "status", summary: "an agent's status", load: client },
      { name: "info", summary: "one agent's details", load: agents },
      { name: "spawn", summary: "start a long-lived agent", load: agents },
      { name: "ask", summary: "ask an agent and print its reply", load: client },
      { name: "prompt", summary: "queue a prompt and print its turn id", load: client },
      { name: "result", summary: "a finished turn's reply", load: client },
      { name: "wait", summary: "wait for a turn or a run to end", load: agents },
      { name: "broadcast", summary: "one prompt to every live agent", load: agents },
      { name: "interrupt", summary: "interrupt an agent's turn in flight", load: agents },
      { name: "close", summary: "close an agent", load: client },
      { name: "fork", summary: "a new agent with another's conversation", load: sessions },
      { name: "compact", summary: "compact a session's conversation", load: sessions },
      { name: "clear", summary: "give a session a fresh conversation", load: sessions },
      { name: "hibernate", summary: "end an idle session's process, keeping the rest", load: sessions },
      { name: "wake", summary: "start a hibernated session again", load: sessions },
      { name: "unpark", summary: "resume agents parked at a usage limit", load: client },
      { name: "approvals", summary: "the tool calls waiting for a human", load: approvals },
      { name: "approve", summary: "allow a pending approval", load: approvals },
      { name: "deny", summary: "deny a pending approval", load: approvals },
      { name: "schedule", summary: "steer the scheduler", load: schedule },
      { name: "findings", summary: "what the scheduler's scans found", load: schedule }
    ]
  },
  {
    title: "What the fleet did",
    entries: [
      { name: "reports", summary: "the report log (--follow keeps printing)", load: client },
      { name: "transcript", summary: "an agent's turns, tool calls and replies", load: client },
      { name: "runs", summary: "the runs, or one run's outcome", load: runs },
      { name: "diff", summary: "what a run in a worktree changed", load: runs },
      {
        name: "costs",
        summary: "what the fleet spent, by agent, model, day...",
        load: () => import("./CostsCommand.js").then((m) => m.commands)
      }
    ]
  },
  {
    title: "Worktrees",
    entries: [
      { name: "worktrees", summary: "the run worktrees of this repository", load: worktrees },
      { name: "gc", summary: "remove the worktrees of ended runs", load: worktrees },
      { name: "verify", summary: "run checks against a branch in a throwaway worktree", load: worktrees }
    ]
  },
  {
    title: "Set up and check",
    entries: [
      {
        name: "init",
        summary: "write a commented starter config here",
        load: () => import("./InitCommand.js").then((m) => m.command)
      },
      {
        name: "doctor",
        summary: "check that this machine is ready",
        load: () => import("./DoctorCommand.js").then((m) => m.command)
      },
      {
        name: "notify",
        summary: "the notification targets, and `notify test`",
        load: () => import("./NotifyCommand.js").then((m) => m.commands)
      },
      {
        name: "completion",
        summary: "the shell completion script",
        load: () => import("./Cli.js").then((m) => m.completion)
      }
    ]
  }
]

/** Every command by name. */
export const COMMANDS: ReadonlyMap<string, Entry> = new Map(
  GROUPS.flatMap((group) => group.entries.map((entry) => [entry.name, entry] as const))
)

/** `flotta --help`: the commands by group, one line each, then the config and the environment. */
export const rootHelp = (version: string): string => {
  const width = Math.max(...[...COMMANDS.keys()].map((name) => name.length)) + 2
  return [
    `flotta ${version}: a control plane for fleets of Claude Code agents.`,
    "",
    "USAGE",
    "  flotta <command> [options]   (`flotta <command> --help` shows a command's arguments and options)",
    ...GROUPS.flatMap((group) => [
      "",
      group.title.toUpperCase(),
      ...group.entries.map((entry) => `  ${entry.name.padEnd(width)}${entry.summary}`)
    ]),
    "",
    "CONFIG",
    "  flotta.config.json, .flotta/config.json or flotta.config.ts in the current directory, or --config.",
    "",
    "ENVIRONMENT (wins over the config)",
    ...VARIABLES.map(([name, meaning]) => `  ${name.padEnd(30)} ${meaning}`),
    "",
    "Each command exits 0 on success and with a code per kind of failure (`flotta run --help` lists them).",
    "Every command, argument and option: https://github.com/flotta-dev/flotta/blob/main/docs/reference/cli.md"
  ].join("\n")
}

/** What `flotta` answers from this table alone, before any of the tree loads: `--help` (or nothing) and `--version`. */
export const answerFromData = (argv: ReadonlyArray<string>, version: string): string | undefined => {
  const first = argv[2]
  if (argv.length <= 3 && (first === undefined || first === "--help" || first === "-h")) return rootHelp(version)
  if (argv.length === 3 && first === "--version") return version
  return undefined
}
