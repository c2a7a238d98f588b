import { useState } from "react";
import { useQuery } from "../../api/hooks.ts";
import { usePaged } from "../../api/paged.ts";
import {
  DeleteBucketDocument,
  StorageBucketsDocument,
  StorageOverviewDocument,
} from "../../generated/graphql.ts";
import { Link, navigate, useLocation } from "../../router.tsx";
import { useSession } from "../../session.tsx";
import { Button } from "../../ui/Button.tsx";
import { ConfirmDialog } from "../../ui/ConfirmDialog.tsx";
import { ErrorBanner, Notice } from "../../ui/ErrorBanner.tsx";
import { Actions } from "../../ui/Form.tsx";
import { formatDateTime } from "../../ui/format.ts";
import { Loading, Page, Panel } from "../../ui/Page.tsx";
import { Table } from "../../ui/Table.tsx";
import { CreateBucketForm } from "./CreateBucketForm.tsx";
import { FilesPanel } from "./FilesPanel.tsx";
import { type Bucket, ONLY_WRITERS, PATH } from "./storage-shared.ts";
import { PlanPanel, UsagePanel } from "./UsagePanels.tsx";

/**
 * The workspace's storage: usage against the plan's quota, the plan's storage limits, buckets
 * (create, delete when empty) and the files of the chosen bucket (upload as the raw body with
 * progress, download, delete). The chosen bucket is in the URL (`?bucket=bkt_…`).
 */
export default function Storage() {
  const canWrite = useSession().can("storage.write");
  const { query } = useLocation();
  const overview = useQuery(StorageOverviewDocument, {});
  const bucketList = usePaged(StorageBucketsDocument, {}, (data) => data.buckets);
  const [deletingBucket, setDeletingBucket] = useState<Bucket | null>(null);
  const [notice, setNotice] = useState("");

  const buckets = bucketList.rows;
  const wanted = query.get("bucket");
  const selected = buckets.find((bucket) => bucket.id === wanted) ?? buckets[0] ?? null;
  const usage = overview.data?.storageUsage;
  const free = usage ? Math.max(0, usage.limit_bytes - usage.used_bytes) : undefined;

  const reloadBuckets = bucketList.restart;

  return (
    <Page title="Storage">
      {!canWrite && (
        <div className="banner banner-info" role="note">
          {ONLY_WRITERS} You can see and download them.
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
          disabled={!canWrite}
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
            empty={canWrite ? "No buckets yet. Create one to upload files." : "No buckets yet."}
            columns={[
              {
                header: "Name",
                cell: (bucket) => (
                  <Link
                    to={`${PATH}?bucket=${bucket.id}`}
                    aria-current={bucket.id === selected?.id ? "true" : undefined}
                    className="storage-bucket-link"
                  >
                    {bucket.name}
                  </Link>
                ),
              },
              { header: "Created", cell: (bucket) => formatDateTime(bucket.created_at), nowrap: true },
              {
                header: "Actions",
                cell: (bucket) => (
                  <div className="row-actions">
                    <Button
                      variant="danger"
                      disabled={!canWrite}
                      onClick={() => setDeletingBucket(bucket)}
                      aria-label={`Delete bucket ${bucket.name}`}
                    >
                      Delete
                    </Button>
                  </div>
                ),
              },
            ]}
          />
        )}
        {bucketList.hasMore && (
          <Actions>
            <Button busy={bucketList.loading} onClick={bucketList.more}>
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
          canWrite={canWrite}
          onChanged={(message) => {
            if (message) setNotice(message);
            overview.reload();
          }}
        />
      )}
      <ConfirmDialog
        subject={deletingBucket}
        title={`Delete bucket ${deletingBucket?.name ?? ""}?`}
        label="Delete bucket"
        confirm="Delete bucket"
        mutation={DeleteBucketDocument}
        variables={(bucket) => ({ id: bucket.id })}
        onClose={() => setDeletingBucket(null)}
        onDone={(_, bucket) => {
          setDeletingBucket(null);
          setNotice(`Bucket ${bucket.name} deleted.`);
          if (bucket.id === selected?.id) navigate(PATH, { replace: true });
          reloadBuckets();
          overview.reload();
        }}
      >
        <p>
          Only an empty bucket can be deleted: delete its files first. Its name becomes free to use again.
        </p>
      </ConfirmDialog>
    </Page>
  );
}
