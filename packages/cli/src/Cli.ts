/**
 * The whole `flotta` command tree: every command and subcommand with its flags, as @effect/cli values. The CLI
 * reference (docs/reference/cli.md) and the completion scripts are generated from it; `Main` loads it only for what
 * needs the whole (completion, the root's own built-in options), else just the command it runs (see Commands).
 */
import { Command } from "@effect/cli"
import { Effect } from "effect"
import * as AgentCommands from "./AgentCommands.js"
import * as ApprovalCommands from "./ApprovalCommands.js"
import * as ClientCommands from "./ClientCommands.js"
import * as CompletionCommand from "./CompletionCommand.js"
import * as CostsCommand from "./CostsCommand.js"
import * as DoctorCommand from "./DoctorCommand.js"
import { VARIABLES } from "./Environment.js"
import * as InitCommand from "./InitCommand.js"
import * as McpCommand from "./McpCommand.js"
import * as NotifyCommand from "./NotifyCommand.js"
import * as ReplCommand from "./ReplCommand.js"
import * as RunCommand from "./RunCommand.js"
import * as RunsCommands from "./RunsCommands.js"
import * as ScheduleCommands from "./ScheduleCommands.js"
import * as ServeCommand from "./ServeCommand.js"
import * as SessionCommands from "./SessionCommands.js"
import { version } from "./Version.js"
import * as WorktreeCommands from "./WorktreeCommands.js"

export { version } from "./Version.js"

/** `flotta completion`: the script for the whole tree. */
export const completion = CompletionCommand.make(completionScript)

export const flotta = Command.make("flotta").pipe(
  Command.withDescription(
    "A control plane for fleets of Claude Code agents.\n\n" +
      "Config: flotta.config.json, .flotta/config.json or flotta.config.ts in the current directory, or --config.\n" +
      "Environment (wins over the config):\n" +
      VARIABLES.map(([name, meaning]) => `  ${name.padEnd(30)} ${meaning}`).join("\n") +
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
    completion
  ])
)

/** The whole tree's completion script (a declaration with its type spelt out: the tree holds its command). */
function completionScript(shell: CompletionCommand.Shell): Effect.Effect<Array<string>> {
  return CompletionCommand.script(flotta, shell)
}

/** The program over argv (what `Main` runs under NodeRuntime). */
export const cli = Command.run(flotta, { name: "flotta", version })
