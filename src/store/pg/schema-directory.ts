/**
 * PLACEHOLDER on branch pgbase only: the pg-directory work replaces this file with the real
 * DDL of the directory, notification and inbox tables.
 */

/** The directory, notification and inbox tables (placeholder: none yet). */
export const DIRECTORY_DDL = `
`
