/**
 * What each report entry says, as data: one Schema per kind, and an entry decoded into a tagged union on its
 * `kind`. The store keeps an entry as `kind` + `data` (JSON); posting is typed by these Schemas (a poster cannot
 * post a kind with the wrong data) and every reader decodes instead of guessing a kind's fields.
 *
 * An entry this version cannot read (a kind a newer host wrote into a shared store, or data that does not fit its
 * kind's Schema) is kept and decoded as `Raw`: shown as it is, never dropped, never fatal.
 *
 * The engine's own kinds are in `EngineEvents`. A package above core declares its own with `kind` (the scheduler's,
 * the webhooks', the cluster's) and decodes with them; the engine names none of their concepts.
 */
import { Option, Schema } from "effect"
import type { ReportEntry } from "./AgentView.js"

/**
 * One report kind: its name, the Schema of its data and what it means. The data's Schema has no transformation
 * (its type is its JSON), so a post is stored as it is given, with no encoding on the turn's path.
 */
export interface Kind<K extends string = string, A = unknown> extends AnyKind {
  readonly kind: K
  readonly data: Schema.Schema<A>
  /** The entry in one line, for a person (the dashboard's reports, the cli's); else its data as JSON. */
  readonly summary?: (data: A) => string
}

/** Any kind, whatever its data: what lists of kinds hold. */
export interface AnyKind {
  readonly kind: string
  readonly data: Schema.Schema.AnyNoContext
  readonly description: string
  /** Live only: handed to subscribers, never kept in the log (a streaming agent's `text_delta`). */
  readonly live?: true
  /** An entry's data decoded by this kind's Schema: `None` when it does not fit. */
  readonly decodeData: (data: unknown) => Option.Option<unknown>
  /** An entry's line from its data: its kind's summary when the data fits and the kind has one. */
  readonly lineOf: (data: unknown) => Option.Option<string>
}

export interface KindOptions<A> {
  readonly live?: true
  readonly summary?: (data: A) => string
}

/**
 * Every kind declared in this process, by name: a package's kinds are declared as its module loads, so a reader
 * can tell of kinds it does not import (the dashboard summarizes the webhooks' entries without importing them).
 */
const declared = new Map<string, AnyKind>()

/** Declares a kind. */
export const kind = <const K extends string, A>(
  name: K,
  data: Schema.Schema<A>,
  description: string,
  options: KindOptions<NoInfer<A>> = {}
): Kind<K, A> => {
  const decodeData = Schema.decodeUnknownOption(data)
  const { summary } = options
  const declaring: Kind<K, A> = {
    kind: name,
    data,
    description,
    ...options,
    decodeData,
    lineOf: summary === undefined ? () => Option.none() : (u) => Option.map(decodeData(u), summary)
  }
  declared.set(name, declaring)
  return declaring
}

/** An entry of a kind this version knows, with its data decoded. */
export type Event<K extends string, A> = Omit<ReportEntry, "kind" | "data"> & {
  readonly _tag: "Known"
  readonly kind: K
  readonly data: A
}

/** An entry this version cannot read as typed data: kept and shown as it is. */
export type Raw = ReportEntry & {
  readonly _tag: "Raw"
  /** Why: its kind is not one of those decoded with (`unknown kind`), or its data does not fit (`malformed`). */
  readonly why: "unknown kind" | "malformed"
}

/** The decoded entry of one kind. */
export type EventOf<T> = T extends Kind<infer K, infer A> ? Event<K, A> : never

/** The typed entries of a list of kinds, or `Raw`: the tagged union readers narrow on `_tag`, then `kind`. */
export type Decoded<Ks extends ReadonlyArray<AnyKind>> = EventOf<Ks[number]> | Raw

/** The data each kind of a list carries, by kind name: what `ReportLog.post` checks a post against. */
export type DataOf<Ks extends ReadonlyArray<AnyKind>> = {
  readonly [K in Ks[number] as K["kind"]]: K extends Kind<string, infer A> ? A : never
}

const known = <K extends string, A>(entry: ReportEntry, kind: K, data: A): Event<K, A> => ({
  ...entry,
  _tag: "Known",
  kind,
  data
})

/** An entry as one kind: `None` when it is another kind, or its data does not fit (the reader skips it). */
export const decodeAs = <K extends string, A>(k: Kind<K, A>) => {
  const decode = Schema.decodeUnknownOption(k.data)
  return (entry: ReportEntry): Option.Option<Event<K, A>> =>
    entry.kind === k.kind ? Option.map(decode(entry.data), (data) => known(entry, k.kind, data)) : Option.none()
}

/** Entries as a tagged union of the kinds given: each one known and typed, or `Raw` (kept as it is). */
export const decoder = <const Ks extends ReadonlyArray<AnyKind>>(kinds: Ks) => {
  const byName = new Map(kinds.map((k) => [k.kind, k]))
  return (entry: ReportEntry): Decoded<Ks> => {
    const k = byName.get(entry.kind)
    if (k === undefined) return { ...entry, _tag: "Raw", why: "unknown kind" }
    const data = k.decodeData(entry.data)
    // The kind found by name decoded the data, so the pair is that kind's member of the union: the map cannot say so.
    return (Option.isSome(data)
      ? known(entry, entry.kind, data.value)
      : { ...entry, _tag: "Raw", why: "malformed" }) as Decoded<Ks>
  }
}

/**
 * The Schema of an entry's `kind` and `data` over a list of kinds: one member per kind, then any other entry kept
 * raw (a newer host's kind, or data that does not fit). The generated docs and the round-trip tests use it.
 */
export const union = <const Ks extends ReadonlyArray<AnyKind>>(kinds: Ks) =>
  Schema.Union(
    ...kinds.map((k) => Schema.Struct({ kind: Schema.Literal(k.kind), data: k.data })),
    Schema.Struct({ kind: Schema.String, data: Schema.Unknown })
  )

const LINE_MAX = 200
const clip = (text: string) => (text.length <= LINE_MAX ? text : text.slice(0, LINE_MAX) + "…")

/**
 * An entry in one line, by the kinds given: a known kind's own summary, else (a kind not given, one with no
 * summary, data that does not fit) its data as compact JSON. A kind not given but declared in this process (by a
 * package the reader does not import) is read by its declaration. Never more than 200 characters and an ellipsis.
 */
export const line = <const Ks extends ReadonlyArray<AnyKind>>(kinds: Ks) => {
  const byName = new Map(kinds.map((k) => [k.kind, k]))
  return (entry: ReportEntry): string => {
    const said = Option.flatMap(
      Option.fromNullable(byName.get(entry.kind) ?? declared.get(entry.kind)),
      (k) => k.lineOf(entry.data)
    )
    return clip(Option.getOrElse(said, () => JSON.stringify(entry.data) ?? ""))
  }
}

/** A Schema with a description: what the generated reference says of a field. */
export const described = <A>(schema: Schema.Schema<A>, description: string) => schema.annotations({ description })

/** A cost in a line: ` ($0.0123)`. */
export const costOf = (usd: number) => ` ($${usd.toFixed(4)})`

/** The words given, skipping the missing and the empty, joined by spaces. */
export const words = (...parts: ReadonlyArray<string | null | undefined>) =>
  parts.filter((w): w is string => typeof w === "string" && w.length > 0).join(" ")
