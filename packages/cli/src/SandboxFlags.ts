/**
 * The sandbox as command-line flags, shared by `flotta run` and `flotta spawn`: `--sandbox`, `--sandbox-allow-host
 * HOST` and `--sandbox-writable PATH` (both repeatable, and each implies `--sandbox`). Each bad value names its flag
 * and the value: `--sandbox-allow-host: "https://github.com" is a URL or a path, not a host: ...`.
 */
import { HelpDoc, Options, ValidationError } from "@effect/cli"
import { FileSystem } from "@effect/platform"
import { hostProblem } from "@flotta/core/Sandbox"
import type { SandboxData } from "@flotta/core/Sandbox"
import { Effect, Schema } from "effect"
import * as path from "node:path"
import * as Flags from "./Flags.js"

const Host = Schema.String.pipe(Schema.filter((host) => hostProblem(host) ?? true))

/** Paths that must exist: the sandbox can only make an existing path writable. */
const writable = Options.text("sandbox-writable").pipe(
  Options.withPseudoName("path"),
  Options.withDescription(
    "With --sandbox: let its commands write here too (an existing directory or file; repeat it for more)."
  ),
  Options.repeated,
  Options.mapEffect((paths) =>
    Effect.forEach(paths, (given) =>
      Effect.flatMap(FileSystem.FileSystem, (fs) => fs.exists(given)).pipe(
        Effect.orElseSucceed(() => false),
        Effect.filterOrFail(
          (exists) => exists,
          () =>
            ValidationError.invalidValue(HelpDoc.p(Flags.describe(
              "--sandbox-writable",
              given,
              "does not exist (the sandbox can only make an existing path writable)"
            )))
        ),
        Effect.as(path.resolve(given))
      ))
  )
)

export const options = {
  sandbox: Options.boolean("sandbox").pipe(
    Options.withDescription(
      "Run its Bash in the claude CLI's OS sandbox (bubblewrap and socat on Linux): it writes only in its " +
        "working directory (a run's worktree, with --worktree) and reaches no network. It never starts without it " +
        "(exit code 15); `flotta doctor` says whether the sandbox works here."
    )
  ),
  sandboxAllowHost: Flags.repeatedChecked("sandbox-allow-host", Host, {
    pseudoName: "host",
    description: "With --sandbox: let its commands reach this host (github.com, *.github.com for its subdomains, " +
      "127.0.0.1:8080 for one port; repeat it for more)."
  }),
  sandboxWritable: writable
}

export interface SandboxFlags {
  readonly sandbox: boolean
  readonly sandboxAllowHost: ReadonlyArray<string>
  readonly sandboxWritable: ReadonlyArray<string>
}

/** The flags as the `sandbox` option (none when no flag was given), to spread into a run's or an agent's options. */
export const sandboxOf = (flags: SandboxFlags): { readonly sandbox?: SandboxData } => {
  const hosts = flags.sandboxAllowHost
  const paths = flags.sandboxWritable
  if (hosts.length === 0 && paths.length === 0) return flags.sandbox ? { sandbox: true } : {}
  return {
    sandbox: {
      ...(hosts.length === 0 ? {} : { network: { allow: [...hosts] } }),
      ...(paths.length === 0 ? {} : { writable: [...paths] })
    }
  }
}
