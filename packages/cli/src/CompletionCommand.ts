/**
 * `flotta completion bash|zsh|fish`: the shell completion script for every command, subcommand and flag, as
 * @effect/cli generates it from the command tree (the same script as `flotta --completions <shell>`).
 */
import { Command } from "@effect/cli"
import { Effect } from "effect"
import * as Flags from "./Flags.js"
import * as Output from "./Output.js"

const SHELLS = ["bash", "zsh", "fish"] as const
export type Shell = (typeof SHELLS)[number]

const INSTALL = {
  bash: "eval \"$(flotta completion bash)\" in ~/.bashrc",
  zsh: "eval \"$(flotta completion zsh)\" in ~/.zshrc, after compinit",
  fish: "flotta completion fish > ~/.config/fish/completions/flotta.fish"
} as const

/** The script for one shell, as lines. */
export const script = Effect.fn("CompletionCommand.script")(
  function*<Name extends string, R, E, A>(root: Command.Command<Name, R, E, A>, shell: Shell) {
    return yield* shell === "bash"
      ? Command.getBashCompletions(root, "flotta")
      : shell === "zsh"
      ? Command.getZshCompletions(root, "flotta")
      : Command.getFishCompletions(root, "flotta")
  }
)

/** The command, given the script of the whole tree late (the tree holds this command). */
export const make = (scriptOf: (shell: Shell) => Effect.Effect<Array<string>>) =>
  Command.make(
    "completion",
    {
      shell: Flags.argument(
        "shell",
        "The shell to complete in: bash, zsh or fish.",
        Flags.oneOf(SHELLS),
        `is not one of ${SHELLS.join(", ")}`
      )
    },
    ({ shell }) => Effect.flatMap(scriptOf(shell), (lines) => Output.stdout(lines.join("\n")))
  ).pipe(
    Command.withDescription(
      "Print the shell completion script for flotta's commands and flags. Load it with " +
        SHELLS.map((shell) => `${INSTALL[shell]} (${shell})`).join("; ") + "."
    )
  )
