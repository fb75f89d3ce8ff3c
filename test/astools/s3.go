package astools

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// s3Dir is a backup directory in S3-compatible storage (s3://bucket/prefix), as the tools' own S3
// support names it: each .asb file is an object under the prefix.
type s3Dir struct {
	client         *s3.Client
	bucket, prefix string
}

// isS3 says whether a --directory names S3.
func isS3(dir string) bool { return strings.HasPrefix(dir, "s3://") }

// openS3 connects to the directory's storage with the credentials of the environment, as the tools do
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY); endpoint overrides AWS's (--s3-endpoint-override).
func openS3(dir, endpoint, region string, env func(string) string) (*s3Dir, error) {
	bucket, prefix, _ := strings.Cut(strings.TrimPrefix(dir, "s3://"), "/")
	if bucket == "" {
		return nil, fmt.Errorf("%s: no bucket", dir)
	}
	id, secret := env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY")
	if id == "" || secret == "" {
		return nil, errors.New("no S3 credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not both set")
	}
	client := s3.New(s3.Options{
		Region:       cmp.Or(region, "us-east-1"),
		Credentials:  credentials.NewStaticCredentialsProvider(id, secret, ""),
		UsePathStyle: true,
		BaseEndpoint: optional(endpoint),
	})
	return &s3Dir{client: client, bucket: bucket, prefix: strings.Trim(prefix, "/")}, nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}

// keys are the backup files' objects under the prefix.
func (d *s3Dir) keys(ctx context.Context) ([]string, error) {
	var out []string
	pages := s3.NewListObjectsV2Paginator(d.client, &s3.ListObjectsV2Input{Bucket: aws.String(d.bucket),
		Prefix: aws.String(d.prefix + "/")})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("s3://%s/%s: %w", d.bucket, d.prefix, err)
		}
		for _, o := range page.Contents {
			if k := aws.ToString(o.Key); strings.HasSuffix(k, ".asb") {
				out = append(out, k)
			}
		}
	}
	return out, nil
}

// scan is _scan_objects (src/file_proxy_s3.cc): the .asb objects under the prefix are removed with
// --remove-files, else the backup stops.
func (d *s3Dir) scan(ctx context.Context, log *toolLog, removeFiles bool) bool {
	keys, err := d.keys(ctx)
	switch {
	case err != nil:
		return logErr(log, err)
	case len(keys) > 0 && !removeFiles:
		log.err("S3 directory %s in bucket %s seems to contain an existing backup; use -r to clear the directory",
			d.prefix, d.bucket)
		return false
	}
	return logErr(log, d.removeAll(ctx))
}

// removeAll deletes the backup files' objects.
func (d *s3Dir) removeAll(ctx context.Context) error {
	keys, err := d.keys(ctx)
	for _, k := range keys {
		if _, err := d.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(d.bucket), Key: aws.String(k)}); err != nil {
			return err
		}
	}
	return err
}

// upload writes the local directory's backup files under the prefix.
func (d *s3Dir) upload(ctx context.Context, local string) error {
	files, err := filepath.Glob(filepath.Join(local, "*.asb"))
	for _, f := range files {
		if err := d.put(ctx, f); err != nil {
			return err
		}
	}
	return err
}

func (d *s3Dir) put(ctx context.Context, file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	_, err = d.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(d.bucket),
		Key: aws.String(path.Join(d.prefix, filepath.Base(file))), Body: f})
	return err
}

// download reads the backup files under the prefix into the local directory.
func (d *s3Dir) download(ctx context.Context, local string) error {
	keys, err := d.keys(ctx)
	for _, k := range keys {
		if err := d.get(ctx, k, filepath.Join(local, path.Base(k))); err != nil {
			return err
		}
	}
	return err
}

func (d *s3Dir) get(ctx context.Context, key, file string) error {
	o, err := d.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(d.bucket), Key: aws.String(key)})
	if err != nil {
		return err
	}
	defer func() { _ = o.Body.Close() }()
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	_, err = f.ReadFrom(o.Body)
	return errors.Join(err, f.Close())
}
