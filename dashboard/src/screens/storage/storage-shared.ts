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

/** Why a member's buttons are disabled. */
export const ONLY_OWNERS =
  "Only owners of the workspace can create and delete buckets, and upload and delete files.";
