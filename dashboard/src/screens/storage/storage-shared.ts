import type {
  StorageBucketFieldsFragment,
  StorageFileFieldsFragment,
  StorageOverviewQuery,
} from "../../generated/graphql.ts";
import { BASE } from "../../router.tsx";

// The Storage screen's shared types and texts.

export type Bucket = StorageBucketFieldsFragment;
export type StoredFile = StorageFileFieldsFragment;
export type Usage = StorageOverviewQuery["storageUsage"];

/** The screen's path; `?bucket=bkt_…` picks the bucket shown. */
export const PATH = `${BASE}/storage`;

/** Why the buttons are disabled for a role without storage.write. */
export const ONLY_WRITERS = "Your role cannot create or delete buckets, or upload or delete files.";
