import { useEffect, useId, useRef, useState, type DragEvent } from "react";
import { PLAN_LIMITS, PLANS } from "../../../schema/lib/plans.ts";
import { ApiError } from "../api/errors.ts";
import { graphql } from "../api/graphql.ts";
import { useMutation, useQuery } from "../api/hooks.ts";
import { downloadFile, TransferCancelled, uploadFile, type Progress } from "../api/storage.ts";
import {
  CreateBucketDocument,
  DeleteBucketDocument,
  DeleteFileDocument,
  StorageBucketsDocument,
  StorageFilesDocument,
  StorageOverviewDocument,
  StorageUsageDocument,
  type StorageBucketFieldsFragment,
  type StorageFileFieldsFragment,
  type StorageOverviewQuery,
} from "../generated/graphql.ts";
import { BASE, Link, navigate, useLocation } from "../router.tsx";
import { useSession } from "../session.tsx";
import { Button } from "../ui/Button.tsx";
import { Dialog } from "../ui/Dialog.tsx";
import { ErrorBanner, fieldError, Notice } from "../ui/ErrorBanner.tsx";
import { TextField } from "../ui/Field.tsx";
import { Actions, Form } from "../ui/Form.tsx";
import { formatBytes, formatDateTime, formatNumber, formatPercent } from "../ui/format.ts";
import { Loading, Page, Panel } from "../ui/Page.tsx";
import { Table } from "../ui/Table.tsx";

type Bucket = StorageBucketFieldsFragment;
type StoredFile = StorageFileFieldsFragment;
type Usage = StorageOverviewQuery["storageUsage"];

const PATH = `${BASE}/storage`;
const ONLY_OWNERS = "Only owners of the workspace can create and delete buckets, and upload and delete files.";

/**
 * The workspace's storage: usage against the plan's quota, the plan's storage limits, buckets
 * (create, delete when empty) and the files of the chosen bucket (upload as the raw body with
 * progress, download, delete). The chosen bucket is in the URL (`?bucket=bkt_…`).
 */
export default function Storage() {
  const { isOwner } = useSession();
  const { query } = useLocation();
  const overview = useQuery(StorageOverviewDocument, {});
  const [bucketCursor, setBucketCursor] = useState<string | null>(null);
  const [earlierBuckets, setEarlierBuckets] = useState<Bucket[]>([]);
  const bucketList = useQuery(StorageBucketsDocument, { cursor: bucketCursor });
  const [deletingBucket, setDeletingBucket] = useState<Bucket | null>(null);
  const [notice, setNotice] = useState("");

  const buckets = [...earlierBuckets, ...(bucketList.data?.buckets.data ?? [])];
  const wanted = query.get("bucket");
  const selected = buckets.find((bucket) => bucket.id === wanted) ?? buckets[0] ?? null;
  const usage = overview.data?.storageUsage;
  const free = usage ? Math.max(0, usage.limit_bytes - usage.used_bytes) : undefined;

  const reloadBuckets = () => {
    setEarlierBuckets([]);
    setBucketCursor(null);
    bucketList.reload();
  };

  return (
    <Page title="Storage">
      {!isOwner && (
        <div className="banner banner-info" role="note">
          {ONLY_OWNERS} Members see and download them.
        </div>
      )}
      <Notice>{notice}</Notice>
      <ErrorBanner error={overview.error} />
      {overview.loading && !overview.data && <Loading />}
      {overview.data && usage && (
        <div className="grid-2">
          <UsagePanel usage={usage} />
          <PlanPanel workspace={overview.data.workspace} free={free ?? 0} />
        </div>
      )}
      <Panel title="Buckets">
        <CreateBucketForm
          disabled={!isOwner}
          onCreated={(bucket) => {
            setNotice(`Bucket ${bucket.name} created.`);
            reloadBuckets();
            overview.reload();
            navigate(`${PATH}?bucket=${bucket.id}`);
          }}
        />
        <ErrorBanner error={bucketList.error} />
        {bucketList.loading && buckets.length === 0 && <Loading />}
        {(!bucketList.loading || buckets.length > 0) && (
          <Table
            caption="Buckets"
            rows={buckets}
            rowKey={(bucket) => bucket.id}
            empty={isOwner ? "No buckets yet. Create one to upload files." : "No buckets yet."}
            columns={[
              {
                header: "Name",
                cell: (bucket) => (
                  <Link to={`${PATH}?bucket=${bucket.id}`} aria-current={bucket.id === selected?.id ? "true" : undefined} className="storage-bucket-link">
                    {bucket.name}
                  </Link>
                ),
              },
              { header: "Created", cell: (bucket) => formatDateTime(bucket.created_at), nowrap: true },
              {
                header: "Actions",
                cell: (bucket) => (
                  <div className="row-actions">
                    <Button variant="danger" disabled={!isOwner} onClick={() => setDeletingBucket(bucket)} aria-label={`Delete bucket ${bucket.name}`}>
                      Delete
                    </Button>
                  </div>
                ),
              },
            ]}
          />
        )}
        {bucketList.data?.buckets.has_more && (
          <Actions>
            <Button
              busy={bucketList.loading}
              onClick={() => {
                setEarlierBuckets(buckets);
                setBucketCursor(bucketList.data?.buckets.next_cursor ?? null);
              }}
            >
              Show more buckets
            </Button>
          </Actions>
        )}
      </Panel>
      {selected && (
        <FilesPanel
          key={selected.id}
          bucket={selected}
          free={free}
          limitLabel={usage?.limit_label}
          isOwner={isOwner}
          onChanged={(message) => {
            if (message) setNotice(message);
            overview.reload();
          }}
        />
      )}
      <DeleteBucketDialog
        bucket={deletingBucket}
        onClose={() => setDeletingBucket(null)}
        onDeleted={(bucket) => {
          setDeletingBucket(null);
          setNotice(`Bucket ${bucket.name} deleted.`);
          if (bucket.id === selected?.id) navigate(PATH, { replace: true });
          reloadBuckets();
          overview.reload();
        }}
      />
    </Page>
  );
}

function UsagePanel({ usage }: { usage: Usage }) {
  const summaryId = useId();
  const free = Math.max(0, usage.limit_bytes - usage.used_bytes);
  return (
    <Panel title="Usage">
      <p id={summaryId} className="storage-summary">
        <strong data-testid="storage-used">{formatBytes(usage.used_bytes)}</strong> of <span data-testid="storage-limit">{usage.limit_label}</span> used (
        <span data-testid="storage-percent">{formatPercent(usage.used_percent)}</span>)
      </p>
      <meter
        className="meter"
        min={0}
        max={usage.limit_bytes}
        low={usage.limit_bytes * 0.8}
        high={usage.limit_bytes * 0.95}
        optimum={0}
        value={usage.used_bytes}
        aria-label="Storage used"
        aria-describedby={summaryId}
      >
        {formatPercent(usage.used_percent)}
      </meter>
      <dl className="facts storage-facts">
        <div>
          <dt>Free</dt>
          <dd data-testid="storage-free">{formatBytes(free)}</dd>
        </div>
        <div>
          <dt>Buckets</dt>
          <dd data-testid="storage-buckets">{formatNumber(usage.bucket_count)}</dd>
        </div>
        <div>
          <dt>Files</dt>
          <dd data-testid="storage-files">{formatNumber(usage.object_count)}</dd>
        </div>
      </dl>
      {usage.used_percent >= 90 && (
        <div className="banner storage-warn" role="note">
          {usage.used_bytes >= usage.limit_bytes ? "The quota is used up" : "The quota is almost used up"}: delete files or move to a larger plan to upload
          more.
        </div>
      )}
    </Panel>
  );
}

function PlanPanel({ workspace, free }: { workspace: StorageOverviewQuery["workspace"]; free: number }) {
  return (
    <Panel title="Plan limits">
      <dl className="facts storage-facts">
        <div>
          <dt>Plan</dt>
          <dd data-testid="storage-plan">{workspace.plan}</dd>
        </div>
        <div>
          <dt>Storage quota</dt>
          <dd>{workspace.limits.storage_label}</dd>
        </div>
        <div>
          <dt>Largest file</dt>
          <dd>Up to {formatBytes(free)}, the space left</dd>
        </div>
        <div>
          <dt>Requests a minute</dt>
          <dd>{formatNumber(workspace.limits.requests_per_minute)}</dd>
        </div>
      </dl>
      <p className="field-hint">
        Each upload, download and list is one request. Storage on each plan:{" "}
        {PLANS.map((plan, index) => (
          <span key={plan}>
            {index > 0 && " · "}
            {plan === workspace.plan ? (
              <strong>{`${plan} ${PLAN_LIMITS[plan].storage_label} (this workspace)`}</strong>
            ) : (
              `${plan} ${PLAN_LIMITS[plan].storage_label}`
            )}
          </span>
        ))}
        .
      </p>
    </Panel>
  );
}

function CreateBucketForm({ disabled, onCreated }: { disabled: boolean; onCreated(bucket: Bucket): void }) {
  const [name, setName] = useState("");
  const [create, state] = useMutation(CreateBucketDocument);
  const submit = async () => {
    const result = await create({ name: name.trim() });
    if (!result) return;
    setName("");
    onCreated(result.createBucket);
  };
  const error = fieldError(state.error, "name");
  return (
    <Form onSubmit={submit} aria-label="Create a bucket" className="storage-inline">
      <TextField
        label="Bucket name"
        required
        autoComplete="off"
        autoCapitalize="none"
        spellCheck={false}
        hint={disabled ? "Only owners can create buckets." : "3–63 characters: lower-case letters a–z, digits and -. Unique in the workspace."}
        value={name}
        disabled={disabled}
        error={error}
        onChange={(event) => setName(event.target.value)}
      />
      <Button type="submit" variant="primary" busy={state.pending} disabled={disabled}>
        Create bucket
      </Button>
      {!error && <ErrorBanner error={state.error} />}
    </Form>
  );
}

/** Where an upload is: which file of how many, and its bytes sent. */
interface UploadProgress extends Progress {
  name: string;
  index: number;
  count: number;
}

/** What became of each file of an upload. */
interface UploadOutcome {
  name: string;
  error?: unknown;
}

function FilesPanel({
  bucket,
  free,
  limitLabel,
  isOwner,
  onChanged,
}: {
  bucket: Bucket;
  free: number | undefined;
  limitLabel: string | undefined;
  isOwner: boolean;
  onChanged(message?: string): void;
}) {
  const [search, setSearch] = useState("");
  const [applied, setApplied] = useState("");
  const [cursor, setCursor] = useState<string | null>(null);
  const [earlier, setEarlier] = useState<StoredFile[]>([]);
  const list = useQuery(StorageFilesDocument, { bucket_id: bucket.id, search: applied || null, cursor });
  const [deleting, setDeleting] = useState<StoredFile | null>(null);
  const [downloading, setDownloading] = useState<{ id: string; progress: Progress | null } | null>(null);
  const [downloadError, setDownloadError] = useState<unknown>(undefined);

  // The search applies once typing pauses.
  useEffect(() => {
    if (search.trim() === applied) return;
    const timer = setTimeout(() => {
      setEarlier([]);
      setCursor(null);
      setApplied(search.trim());
    }, 300);
    return () => clearTimeout(timer);
  }, [search, applied]);

  const files = [...earlier, ...(list.data?.files.data ?? [])];
  const restart = () => {
    setEarlier([]);
    setCursor(null);
    list.reload();
  };

  const download = async (file: StoredFile) => {
    if (downloading) return;
    setDownloadError(undefined);
    setDownloading({ id: file.id, progress: null });
    try {
      await downloadFile(file.id, file.file_name, { onProgress: (progress) => setDownloading({ id: file.id, progress }) });
    } catch (error) {
      setDownloadError(error);
    } finally {
      setDownloading(null);
    }
  };

  return (
    <Panel title={`Files in ${bucket.name}`}>
      <UploadForm
        bucket={bucket}
        free={free}
        limitLabel={limitLabel}
        disabled={!isOwner}
        onUploaded={() => {
          restart();
          onChanged();
        }}
      />
      <TextField
        label="Search file names"
        type="search"
        className="storage-search"
        value={search}
        onChange={(event) => setSearch(event.target.value)}
        hint="Part of a name, in any case."
      />
      <ErrorBanner error={list.error} />
      <ErrorBanner error={downloadError} title="The download failed:" />
      {list.loading && files.length === 0 && <Loading />}
      {(!list.loading || files.length > 0) && (
        <Table
          caption={`Files in ${bucket.name}`}
          rows={files}
          rowKey={(file) => file.id}
          empty={applied ? `No file name contains “${applied}”.` : isOwner ? "No files yet. Upload some above." : "No files yet."}
          columns={[
            { header: "Name", cell: (file) => <span className="storage-file-name">{file.file_name}</span> },
            { header: "Type", cell: (file) => <code>{file.content_type}</code> },
            { header: "Size", cell: (file) => formatBytes(file.size_bytes), nowrap: true },
            { header: "Uploaded", cell: (file) => formatDateTime(file.created_at), nowrap: true },
            {
              header: "Actions",
              cell: (file) => {
                const mine = downloading?.id === file.id;
                const percent = mine && downloading.progress?.total ? Math.floor((downloading.progress.loaded / downloading.progress.total) * 100) : null;
                return (
                  <div className="row-actions">
                    <Button busy={mine} onClick={() => void download(file)} aria-label={`Download ${file.file_name}`}>
                      {mine ? `Downloading${percent === null ? "…" : ` ${percent} %`}` : "Download"}
                    </Button>
                    <Button variant="danger" disabled={!isOwner} onClick={() => setDeleting(file)} aria-label={`Delete ${file.file_name}`}>
                      Delete
                    </Button>
                  </div>
                );
              },
            },
          ]}
        />
      )}
      {list.data?.files.has_more && (
        <Actions>
          <Button
            busy={list.loading}
            onClick={() => {
              setEarlier(files);
              setCursor(list.data?.files.next_cursor ?? null);
            }}
          >
            Show more files
          </Button>
        </Actions>
      )}
      <DeleteFileDialog
        file={deleting}
        onClose={() => setDeleting(null)}
        onDeleted={(file) => {
          setDeleting(null);
          restart();
          onChanged(`${file.file_name} deleted: ${formatBytes(file.size_bytes)} freed.`);
        }}
      />
    </Panel>
  );
}

/** The bytes the workspace may still store, asked now; undefined when that failed (the server decides). */
async function spaceLeft(): Promise<number | undefined> {
  try {
    const { storageUsage } = await graphql(StorageUsageDocument);
    return Math.max(0, storageUsage.limit_bytes - storageUsage.used_bytes);
  } catch {
    return undefined;
  }
}

/** A file the quota has no room for, refused before it is sent (with the code the API would answer). */
function tooBig(file: File, left: number, limitLabel: string | undefined): ApiError {
  return new ApiError(
    403,
    "permission_error",
    "storage_quota_exceeded",
    `It is ${formatBytes(file.size)}, and only ${formatBytes(left)} of the workspace's ${limitLabel ? `${limitLabel} ` : ""}storage quota is left: nothing was sent. ` +
      "Delete files or move to a larger plan.",
  );
}

function UploadForm({
  bucket,
  free,
  limitLabel,
  disabled,
  onUploaded,
}: {
  bucket: Bucket;
  free: number | undefined;
  limitLabel: string | undefined;
  disabled: boolean;
  onUploaded(): void;
}) {
  const inputId = useId();
  const input = useRef<HTMLInputElement>(null);
  const [chosen, setChosen] = useState<File[]>([]);
  const [progress, setProgress] = useState<UploadProgress | null>(null);
  const [outcomes, setOutcomes] = useState<UploadOutcome[]>([]);
  const [dragging, setDragging] = useState(false);
  const abort = useRef<AbortController | null>(null);
  const uploading = progress !== null;
  const total = chosen.reduce((sum, file) => sum + file.size, 0);

  // Leaving the screen (or the bucket) stops an upload under way: the server keeps nothing of it.
  useEffect(() => () => abort.current?.abort(), []);
  // Closing or reloading the tab meanwhile asks first.
  useEffect(() => {
    if (!uploading) return;
    const ask = (event: BeforeUnloadEvent) => event.preventDefault();
    window.addEventListener("beforeunload", ask);
    return () => window.removeEventListener("beforeunload", ask);
  }, [uploading]);

  const choose = (files: FileList | null) => {
    setChosen(files ? [...files] : []);
    setOutcomes([]);
  };

  const submit = async () => {
    if (uploading || chosen.length === 0) return;
    const files = chosen;
    const controller = new AbortController();
    abort.current = controller;
    const results: UploadOutcome[] = [];
    setOutcomes([]);
    setProgress({ name: files[0]!.name, index: 0, count: files.length, loaded: 0, total: files[0]!.size });
    // A browser sends the whole body before it reads the answer, so a file past the quota would be
    // sent in full only to be refused: what does not fit is refused here, before a byte is sent.
    // The space left shown may be stale: it is asked afresh when something seems not to fit.
    let left = free;
    if (left === undefined || total > left) left = await spaceLeft();
    for (const [index, file] of files.entries()) {
      if (controller.signal.aborted) break;
      if (left !== undefined && file.size > left) {
        results.push({ name: file.name, error: tooBig(file, left, limitLabel) });
        continue;
      }
      setProgress({ name: file.name, index, count: files.length, loaded: 0, total: file.size });
      try {
        await uploadFile(bucket.id, file, {
          signal: controller.signal,
          onProgress: (sent) => setProgress({ name: file.name, index, count: files.length, ...sent }),
        });
        results.push({ name: file.name });
        if (left !== undefined) left -= file.size;
        onUploaded();
      } catch (error) {
        if (error instanceof TransferCancelled) {
          results.push({ name: file.name, error: new Error("Cancelled: nothing of it was stored.") });
          break;
        }
        results.push({ name: file.name, error });
        // The server knows better: the usage shown was stale (another upload, another person).
        if (error instanceof ApiError && error.code === "storage_quota_exceeded") left = await spaceLeft();
      }
    }
    abort.current = null;
    setProgress(null);
    setOutcomes(results);
    // A refusal may come from a usage shown stale: show it as it is now.
    if (results.some((outcome) => outcome.error !== undefined)) onUploaded();
    setChosen([]);
    if (input.current) input.current.value = "";
  };

  const drop = (event: DragEvent<HTMLFormElement>) => {
    event.preventDefault();
    setDragging(false);
    if (disabled || uploading || event.dataTransfer.files.length === 0) return;
    if (input.current) input.current.files = event.dataTransfer.files;
    choose(event.dataTransfer.files);
  };

  const uploaded = outcomes.filter((outcome) => outcome.error === undefined);
  const failed = outcomes.filter((outcome) => outcome.error !== undefined);
  const percent = progress && progress.total > 0 ? Math.floor((progress.loaded / progress.total) * 100) : 0;

  return (
    <Form
      onSubmit={submit}
      aria-label={`Upload files to ${bucket.name}`}
      className={["storage-upload", dragging ? "storage-upload-over" : ""].filter(Boolean).join(" ")}
      onDragOver={(event) => {
        if (disabled) return;
        event.preventDefault();
        setDragging(true);
      }}
      onDragLeave={() => setDragging(false)}
      onDrop={drop}
    >
      <div className="field">
        <label htmlFor={inputId}>Files to upload</label>
        <input
          id={inputId}
          ref={input}
          type="file"
          multiple
          disabled={disabled || uploading}
          aria-describedby={`${inputId}-hint`}
          onChange={(event) => choose(event.target.files)}
        />
        <p className="field-hint" id={`${inputId}-hint`}>
          {disabled
            ? "Only owners can upload files."
            : `Choose one or more files, or drop them here. Each is sent as it is, up to the space left${free === undefined ? "" : ` (${formatBytes(free)})`}.`}
        </p>
      </div>
      <div className="storage-upload-actions">
        <Button type="submit" variant="primary" busy={uploading} disabled={disabled || chosen.length === 0}>
          {chosen.length > 1 ? `Upload ${chosen.length} files` : "Upload"}
        </Button>
        {uploading && <Button onClick={() => abort.current?.abort()}>Cancel upload</Button>}
        {chosen.length > 0 && !uploading && (
          <span className="muted" data-testid="storage-chosen">
            {chosen.length === 1 ? chosen[0]!.name : `${chosen.length} files`}, {formatBytes(total)}
          </span>
        )}
      </div>
      {progress && (
        <div className="storage-progress">
          <label htmlFor={`${inputId}-progress`}>
            Uploading {progress.name}
            {progress.count > 1 && ` (${progress.index + 1} of ${progress.count})`}
          </label>
          <progress
            id={`${inputId}-progress`}
            max={100}
            value={percent}
            aria-valuetext={`${percent} %, ${formatBytes(progress.loaded)} of ${formatBytes(progress.total)}`}
          />
          <span className="muted" aria-hidden="true">
            {percent} % · {formatBytes(progress.loaded)} of {formatBytes(progress.total)}
          </span>
        </div>
      )}
      {uploaded.length > 0 && <Notice>{uploaded.length === 1 ? `${uploaded[0]!.name} uploaded.` : `${uploaded.length} files uploaded.`}</Notice>}
      {failed.map((outcome, index) => (
        <ErrorBanner key={`${index}-${outcome.name}`} error={outcome.error} title={`${outcome.name} was not uploaded:`} />
      ))}
    </Form>
  );
}

function DeleteBucketDialog({ bucket, onClose, onDeleted }: { bucket: Bucket | null; onClose(): void; onDeleted(bucket: Bucket): void }) {
  const [remove, state] = useMutation(DeleteBucketDocument);
  const close = () => {
    state.reset();
    onClose();
  };
  const submit = async () => {
    if (!bucket) return;
    const result = await remove({ id: bucket.id });
    if (!result) return;
    state.reset();
    onDeleted(bucket);
  };
  return (
    <Dialog open={bucket !== null} title={`Delete bucket ${bucket?.name ?? ""}?`} onClose={close}>
      <Form onSubmit={submit} aria-label="Delete bucket">
        <p>Only an empty bucket can be deleted: delete its files first. Its name becomes free to use again.</p>
        <ErrorBanner error={state.error} />
        <Actions>
          <Button onClick={close}>Cancel</Button>
          <Button type="submit" variant="danger" busy={state.pending}>
            Delete bucket
          </Button>
        </Actions>
      </Form>
    </Dialog>
  );
}

function DeleteFileDialog({ file, onClose, onDeleted }: { file: StoredFile | null; onClose(): void; onDeleted(file: StoredFile): void }) {
  const [remove, state] = useMutation(DeleteFileDocument);
  const close = () => {
    state.reset();
    onClose();
  };
  const submit = async () => {
    if (!file) return;
    const result = await remove({ id: file.id });
    if (!result) return;
    state.reset();
    onDeleted(file);
  };
  return (
    <Dialog open={file !== null} title={`Delete ${file?.file_name ?? "file"}?`} onClose={close}>
      <Form onSubmit={submit} aria-label="Delete file">
        <p>Its bytes are deleted at once{file ? `, freeing ${formatBytes(file.size_bytes)}` : ""}. This cannot be undone.</p>
        <ErrorBanner error={state.error} />
        <Actions>
          <Button onClick={close}>Cancel</Button>
          <Button type="submit" variant="danger" busy={state.pending}>
            Delete file
          </Button>
        </Actions>
      </Form>
    </Dialog>
  );
}
