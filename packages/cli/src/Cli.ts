/**
 * The `flotta` command tree: every command and subcommand with its flags, as @effect/cli values. `Main` runs it;
 * the CLI reference (docs/reference/cli.md) and the completion scripts are generated from it.
 */
import { Command } from "@effect/cli"
import { Effect } from "effect"
import { createRequire } from "node:module"
import * as AgentCommands from "./AgentCommands.js"
import * as ApprovalCommands from "./ApprovalCommands.js"
import * as ClientCommands from "./ClientCommands.js"
import * as CompletionCommand from "./CompletionCommand.js"
import * as ConfigFile from "./ConfigFile.js"
import * as CostsCommand from "./CostsCommand.js"
import * as DoctorCommand from "./DoctorCommand.js"
import * as InitCommand from "./InitCommand.js"
import * as McpCommand from "./McpCommand.js"
import * as NotifyCommand from "./NotifyCommand.js"
import * as ReplCommand from "./ReplCommand.js"
import * as RunCommand from "./RunCommand.js"
import * as RunsCommands from "./RunsCommands.js"
import * as ScheduleCommands from "./ScheduleCommands.js"
import * as ServeCommand from "./ServeCommand.js"
import * as SessionCommands from "./SessionCommands.js"
import * as WorktreeCommands from "./WorktreeCommands.js"

/** Variables the command reads (ConfigFile.ENVIRONMENT maps the rest onto the config); children inherit them all. */
const ENVIRONMENT: ReadonlyArray<readonly [string, string]> = [
  ["FLOTTA_CLAUDE_PATH", "the claude executable when the config names none (else the pinned dependency, then PATH)"],
  ...ConfigFile.ENVIRONMENT.map((o) => [o.variable, `${o.meaning}; overrides ${o.path.join(".")}`] as const),
  ["ANTHROPIC_API_KEY", "passed on to claude (as are ANTHROPIC_BASE_URL and the rest)"]
]

export const version = (createRequire(import.meta.url)("../package.json") as { readonly version: string }).version

export const flotta = Command.make("flotta").pipe(
  Command.withDescription(
    "A control plane for fleets of Claude Code agents.\n\n" +
      "Config: flotta.config.json, .flotta/config.json or flotta.config.ts in the current directory, or --config.\n" +
      "Environment (wins over the config):\n" +
      ENVIRONMENT.map(([name, meaning]) => `  ${name.padEnd(30)} ${meaning}`).join("\n") +
      "\n\nEach command exits 0 on success and with a code per kind of failure (listed under `run`)."
  ),
  Command.withSubcommands([
    RunCommand.command,
    ServeCommand.command,
    McpCommand.command,
    ReplCommand.command,
    InitCommand.command,
    DoctorCommand.command,
    ...ClientCommands.commands,
    ...AgentCommands.commands,
    ...SessionCommands.commands,
    ...RunsCommands.commands,
    ...CostsCommand.commands,
    ...WorktreeCommands.commands,
    ...ScheduleCommands.commands,
    ...ApprovalCommands.commands,
    ...NotifyCommand.commands,
    CompletionCommand.make(completionScript)
  ])
)

/** The whole tree's completion script (a declaration with its type spelt out: the tree holds its command). */
function completionScript(shell: CompletionCommand.Shell): Effect.Effect<Array<string>> {
  return CompletionCommand.script(flotta, shell)
}

/** The program over argv (what `Main` runs under NodeRuntime). */
export const cli = Command.run(flotta, { name: "flotta", version })
