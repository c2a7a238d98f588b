import { useState } from "react";
import { useMutation } from "../../api/hooks.ts";
import { CreateBucketDocument } from "../../generated/graphql.ts";
import { Button } from "../../ui/Button.tsx";
import { ErrorBanner, fieldError } from "../../ui/ErrorBanner.tsx";
import { TextField } from "../../ui/Field.tsx";
import { Form } from "../../ui/Form.tsx";
import type { Bucket } from "./storage-shared.ts";

/** Names and creates a bucket (owners only). */
export function CreateBucketForm({
  disabled,
  onCreated,
}: {
  disabled: boolean;
  onCreated(bucket: Bucket): void;
}) {
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
        hint={
          disabled
            ? "Your role cannot create buckets."
            : "3–63 characters: lower-case letters a–z, digits and -. Unique in the workspace."
        }
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
