/**
 * `--permission`, `--allow` and `--ask` for `run` and `spawn` (each command says in its own words who is asked),
 * and the permission they make together, each conflict named.
 */
import { Options } from "@effect/cli"
import type { Policy } from "@flotta/core/Permission"
import { READ_ONLY_TOOLS } from "@flotta/core/Permission"
import { Effect, Option } from "effect"
import * as Flags from "./Flags.js"
import * as Shared from "./SharedOptions.js"

/** The three flags, described as the command means them. */
export const options = (described: { readonly permission: string; readonly allow: string; readonly ask: string }) => ({
  permission: Flags.choice("permission", ["read_only", "full", "ask"]).pipe(Flags.optional(described.permission)),
  allow: Options.text("allow").pipe(
    Options.withPseudoName("tools"),
    Options.withDescription(described.allow),
    Options.repeated
  ),
  ask: Options.text("ask").pipe(
    Options.withPseudoName("tools"),
    Options.withDescription(described.ask),
    Options.repeated
  )
})

/** The tools a repeated, comma-separated flag names. */
const toolsOf = (flag: string, given: ReadonlyArray<string>) => {
  const empty = given.find((a) => a.split(",").every((t) => t.trim().length === 0))
  if (empty !== undefined) return Effect.fail(Shared.badValue(flag, empty, "names no tool"))
  return Effect.succeed(given.flatMap((a) => a.split(",")).map((t) => t.trim()).filter((t) => t.length > 0))
}

/**
 * The permission from `--permission`, `--allow` and `--ask`. The `--ask` tools wait for a person; the others are
 * `--allow`'s, else the read-only ones.
 */
export const permissionOf = Effect.fn("PermissionFlags.permissionOf")(function*(
  permission: Option.Option<"read_only" | "full" | "ask">,
  allow: ReadonlyArray<string>,
  ask: ReadonlyArray<string> = []
) {
  const tools = yield* toolsOf("--allow", allow)
  const asked = yield* toolsOf("--ask", ask)
  if (tools.length > 0 && Option.isSome(permission)) {
    return yield* Shared.invalid("--allow", "give either --permission or --allow, not both")
  }
  if (asked.length > 0 && Option.isSome(permission) && permission.value !== "read_only") {
    return yield* Shared.invalid(
      "--ask",
      permission.value === "full"
        ? "--permission full allows every tool without asking: give --ask with --allow (or alone), not with it"
        : "--permission ask asks about every tool that is not read-only already: give one or the other"
    )
  }
  const both = asked.filter((tool) => tools.includes(tool))
  if (both.length > 0) {
    return yield* Shared.invalid("--ask", `${both.join(", ")} cannot be both allowed and asked about`)
  }
  const policy: Policy = asked.length > 0
    ? { allow: tools.length > 0 ? tools : READ_ONLY_TOOLS, ask: asked }
    : tools.length > 0
    ? { allow: tools }
    : Option.getOrElse(permission, () => "read_only" as const)
  return policy
})
