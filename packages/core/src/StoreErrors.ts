/**
 * Why a store cannot be used, as typed failures: it cannot be opened, read or written; another host holds it; or a
 * newer flotta wrote it. `Errors` re-exports them with every other failure a caller can see.
 */
import { Schema } from "effect"

/** The store cannot be opened, read or written (a corrupt file, a missing directory, a refused connection). */
export class StoreUnavailable extends Schema.TaggedError<StoreUnavailable>()("StoreUnavailable", {
  location: Schema.String,
  reason: Schema.String,
  hint: Schema.String
}) {
  override get message() {
    return `the store ${this.location} cannot be used: ${this.reason}. ${this.hint}`
  }
}

/** Another host holds the store: one writer per store. */
export class StoreLocked extends Schema.TaggedError<StoreLocked>()("StoreLocked", {
  location: Schema.String,
  holder: Schema.String
}) {
  override get message() {
    return `the store ${this.location} is in use by ${this.holder}: one fleet per store. Stop that one, or give ` +
      `this one another store`
  }
}

/** The store was written by a newer flotta: nothing is changed. */
export class StoreSchemaTooNew extends Schema.TaggedError<StoreSchemaTooNew>()("StoreSchemaTooNew", {
  location: Schema.String,
  found: Schema.Number,
  supported: Schema.Number
}) {
  override get message() {
    return `the store ${this.location} has schema version ${this.found}, newer than this flotta's ` +
      `${this.supported}: upgrade flotta, or give it another store. Nothing was changed`
  }
}

export type StoreError = StoreUnavailable | StoreLocked | StoreSchemaTooNew
