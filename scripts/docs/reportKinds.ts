/**
 * docs/reference/report-kinds.md from the report kinds' Schemas (`ReportEvent` in core, and the kinds the
 * scheduler, the webhooks and the cluster declare): each kind's name, what it means, and its data's fields with
 * their descriptions, read from the JSON Schema of its data.
 */
import * as ClusterEvents from "@flotta/cluster/ClusterEvents"
import * as EngineEvents from "@flotta/core/EngineEvents"
import * as ReportEvent from "@flotta/core/ReportEvent"
import * as SchedulerEvents from "@flotta/scheduler/SchedulerEvents"
import * as WebhooksEvents from "@flotta/webhooks/WebhooksEvents"
import { JSONSchema } from "effect"
import { banner, slug, table } from "./markdown.js"
import type { Json } from "./mcpTools.js"
import { fieldRows, isObject, resolve } from "./mcpTools.js"

/** Every package's kinds, in the order the page lists them. */
export const groups: ReadonlyArray<{
  readonly title: string
  readonly intro: string
  readonly kinds: ReadonlyArray<ReportEvent.AnyKind>
}> = [
  {
    title: "The engine's",
    intro: "Posted under the agent's (or run's) name, unless a kind says otherwise (`@flotta/core/EngineEvents`).",
    kinds: EngineEvents.engine
  },
  {
    title: "The scheduler's",
    intro: "Posted under `scheduler` (`@flotta/scheduler/SchedulerEvents`).",
    kinds: SchedulerEvents.kinds
  },
  {
    title: "The webhooks'",
    intro: "Triggers under `hooks`, the notifications' own under `notify` (`@flotta/webhooks/WebhooksEvents`).",
    kinds: WebhooksEvents.kinds
  },
  {
    title: "The cluster's",
    intro: "Posted by a host of a fleet spread over several hosts (`@flotta/cluster/ClusterEvents`).",
    kinds: ClusterEvents.kinds
  }
]

/** A kind's data: one table, or one per alternative (a union's members, each by its title). */
const dataTables = (k: ReportEvent.AnyKind): Array<string> => {
  const made: unknown = JSONSchema.make(k.data)
  const root: Json = isObject(made) ? made : {}
  // A union's alternatives, nested ones flattened.
  const alternatives = (node: Json): Array<Json> => {
    const resolved = resolve(root, node)
    return Array.isArray(resolved["anyOf"]) ? resolved["anyOf"].filter(isObject).flatMap(alternatives) : [resolved]
  }
  return alternatives(root).flatMap((member) => {
    const resolved = resolve(root, member)
    const rows = fieldRows(root, resolved)
    const title = typeof resolved["title"] === "string" ? `For ${resolved["title"]}:` : undefined
    const more = isObject(resolved["additionalProperties"]) || resolved["additionalProperties"] === true
      ? "Other fields may come with it."
      : undefined
    const body = rows.length === 0 ? "No fields." : table(["field", "type", "always", "description"], rows)
    return [title, body, more].filter((part): part is string => part !== undefined)
  })
}

const kindSection = (k: ReportEvent.AnyKind): string =>
  [
    `### ${k.kind}`,
    `${k.description[0]!.toUpperCase()}${k.description.slice(1)}.${k.live === true ? " Live only: never kept." : ""}`,
    ...dataTables(k)
  ].join("\n\n")

/** The page. */
export const reportKindsReference = (): string =>
  [
    banner("Report kinds reference", "the report kinds' Schemas (EngineEvents and each package's *Events module)"),
    "Every report entry is `{ seq, at, agent, kind, turnId?, host?, data }`: `data` is what its `kind` says below. " +
    "A reader decodes an entry by its kind (`ReportEvent.decoder`, `ReportEvent.decodeAs`); an entry of a kind " +
    "it does not know (a newer host's, in a shared store) or whose data does not fit is kept and shown raw.",
    table(
      ["kind", "package", "what it says"],
      groups.flatMap((g) => g.kinds.map((k) => [`[${k.kind}](#${slug(k.kind)})`, g.title, k.description]))
    ),
    ...groups.flatMap((g) => [`## ${g.title}`, g.intro, ...g.kinds.map(kindSection)])
  ].join("\n\n") + "\n"
