"""``s3://bucket/prefix`` backend through boto3, configured for MinIO and other S3-compatible servers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from botocore.handlers import add_expect_header

from zelda_rlaif.errors import ObjectExists, ObjectNotFound, StoreError
from zelda_rlaif.storage.base import ObjectStore, exists_message

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


class S3Store(ObjectStore):
    def __init__(
        self,
        bucket: str,
        prefix: str,
        *,
        endpoint_url: str | None,
        region: str,
        access_key: str,
        secret_key: str,
        create_bucket: bool = False,
        connect_timeout_s: float = 5.0,
        read_timeout_s: float = 30.0,
    ) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.url = f"s3://{bucket}/{self.prefix}" if self.prefix else f"s3://{bucket}"
        # Path-style + SigV4 is what MinIO expects; boto3 >= 1.36 otherwise adds CRC checksums that
        # several S3-compatible servers reject. Bounded timeouts turn a server that accepts connections but never
        # answers into an error; retrying is left to the wrapper open_store puts around this store (retrying.py),
        # which logs an outage once and stops past its limit.
        config = Config(
            signature_version="s3v4",
            s3={"addressing_style": "path"},
            connect_timeout=connect_timeout_s,
            read_timeout=read_timeout_s,
            retries={"max_attempts": 1, "mode": "standard"},
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        )
        self._client: S3Client = boto3.client(
            "s3",
            endpoint_url=endpoint_url,
            region_name=region,
            aws_access_key_id=access_key,
            aws_secret_access_key=secret_key,
            config=config,
        )
        # boto3 sends each PUT with "Expect: 100-continue" and holds the body back until the server's interim
        # answer: a second round trip per object, which only pays for a large upload the server might refuse. This
        # store writes small objects whole from memory (a segment is ~80 of them), so each is sent at once
        # (measured: ~20-30% less client CPU and wall time per small put, ~5-12% per whole segment; docs/performance.md,
        # "Segment export").
        self._client.meta.events.unregister("before-call.s3", add_expect_header)
        self._check_bucket(create_bucket)

    def _check_bucket(self, create: bool) -> None:
        try:
            self._client.head_bucket(Bucket=self.bucket)
        except ClientError as exc:
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if status == 404 and create:
                self._client.create_bucket(Bucket=self.bucket)
                return
            raise StoreError(
                f"cannot use bucket {self.bucket!r} ({status}): create it first or check "
                "ZELDA_STORE_S3_ACCESS_KEY / ZELDA_STORE_S3_SECRET_KEY"
            ) from exc
        except BotoCoreError as exc:
            raise StoreError(
                f"cannot reach the S3 endpoint for {self.url}: {exc}; check ZELDA_STORE_S3_ENDPOINT"
            ) from exc

    def _key(self, key: str) -> str:
        if not key or key.startswith("/") or ".." in key.split("/"):
            raise ValueError(f"invalid object key {key!r}")
        return f"{self.prefix}/{key}" if self.prefix else key

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream", *,
                  exclusive: bool = False) -> None:
        if not exclusive:
            self._client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data, ContentType=content_type)
            return
        # A conditional write: the server creates the object only if the key is free, in one request (AWS S3,
        # MinIO and moto's server honour If-None-Match on PUT), so no other writer can slip in between a check
        # and the put. A retry whose first attempt was stored but not answered finds its own object: the retrying
        # wrapper (retrying.py) then compares the bytes.
        try:
            self._client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data, ContentType=content_type,
                                    IfNoneMatch="*")
        except ClientError as exc:
            if exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 412:
                raise ObjectExists(exists_message(key, self.url)) from None
            raise

    def get_bytes(self, key: str) -> bytes:
        try:
            response = self._client.get_object(Bucket=self.bucket, Key=self._key(key))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in {"NoSuchKey", "404"}:
                raise ObjectNotFound(f"no object {key!r} in {self.url}") from None
            raise
        return response["Body"].read()

    def exists(self, key: str) -> bool:
        try:
            self._client.head_object(Bucket=self.bucket, Key=self._key(key))
        except ClientError as exc:
            if exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 404:
                return False
            raise
        return True

    def list(self, prefix: str) -> Iterator[str]:
        strip = len(self.prefix) + 1 if self.prefix else 0
        full = f"{self.prefix}/{prefix}" if self.prefix else prefix
        paginator = self._client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=full):
            for item in page.get("Contents", []):
                yield item["Key"][strip:]

    def delete(self, key: str) -> None:
        self._client.delete_object(Bucket=self.bucket, Key=self._key(key))
