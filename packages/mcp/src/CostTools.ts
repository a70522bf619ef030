/**
 * The cost console over MCP: `flotta_costs` answers what the fleet spent in a window (`since`, `until`: `7d`,
 * `24h`, a date), grouped by agent, run, routine, model, day or hour, from the turns the store keeps.
 */
import { CostBy, CostReport } from "@flotta/core/Costs"
import { exact } from "@flotta/core/Decode"
import { Flotta } from "@flotta/core/Flotta"
import * as Operations from "@flotta/core/Operations"
import { Effect, Schema } from "effect"
import * as Tool from "./Tool.js"

const Bound = Schema.String.pipe(Schema.minLength(1))

export const CostsArgs = Schema.Struct({
  since: exact(Bound.annotations({
    description: "From when: a span back from now (7d, 24h, 30m, 2w) or a date/instant (2025-01-31); default: all"
  })),
  until: exact(Bound.annotations({ description: "Until when (exclusive), as `since`; default: now" })),
  by: exact(
    CostBy.annotations({
      description:
        "Group by agent (default), run, model, day or hour (UTC), or by a label: \"label:KEY\" (label:team; the " +
        "scheduler's runs carry label:routine)"
    })
  )
})

export const tools: ReadonlyArray<Tool.Tool> = [
  Tool.make({
    name: Operations.toolName("costs"),
    title: "Cost console",
    description: "What the fleet's turns spent (USD) in a window: the total, the turns counted, and the groups " +
      "by agent, run, model, day, hour or a label (label:team) (days and hours in time order, the rest biggest " +
      "spender first; a null key is spend outside any run, or without the label). A bad bound is InvalidSpec naming it.",
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    input: CostsArgs,
    output: CostReport,
    run: (query) => Effect.flatMap(Flotta, (fleet) => fleet.costs(query))
  })
]
