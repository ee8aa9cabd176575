import type { components } from '../client/schema.js'

/**
 * The receipts routes the inbox element uses (docs/inbox-element.md) typed in the generated
 * schema's own shape, for as long as the schema of this branch predates them. Once the
 * regenerated sdk/client/schema.d.ts has these paths, this file goes.
 */

type ErrorResponse = { headers: { [name: string]: unknown }; content: { 'application/json': components['schemas']['Error'] } }
type NoParams = { query?: never; header?: never; path?: never; cookie?: never }
type Json<T> = { headers: { [name: string]: unknown }; content: { 'application/json': T } }
type Errors = { 400: ErrorResponse; 401: ErrorResponse; 404: ErrorResponse }
type Unused = { put?: never; delete?: never; options?: never; head?: never; patch?: never; trace?: never }

/** Exact counts over the non-archived, non-snoozed messages, and per tag asked for. */
export interface InboxCounts {
  unread_count: number
  unseen_count: number
  total: number
  by_tag: Record<string, { unread_count: number; unseen_count: number; total: number }>
}

type PostIds<B> = {
  parameters: NoParams
  get?: never
  post: {
    parameters: NoParams
    requestBody: { content: { 'application/json': B } }
    responses: { 200: Json<components['schemas']['InboxUpdated']> } & Errors
  }
} & Unused

/** `GET /v1/inbox/counts`, `POST /v1/inbox/clicked` and `POST /v1/inbox/snooze`. */
export interface PendingPaths {
  '/v1/inbox/counts': {
    parameters: NoParams
    get: {
      parameters: { query?: { tags?: string; topic?: string; app_id?: string }; header?: never; path?: never; cookie?: never }
      requestBody?: never
      responses: { 200: Json<InboxCounts> } & Errors
    }
    post?: never
  } & Unused
  '/v1/inbox/clicked': PostIds<{ ids: string[] }>
  '/v1/inbox/snooze': PostIds<{ ids: string[]; until: string }>
}
