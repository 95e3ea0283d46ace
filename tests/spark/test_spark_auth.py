"""Connection options (TLS, mutual TLS, user/password, NKey) reach the connections the
driver and the tasks open."""
from __future__ import annotations

import pytest


def test_connect_options_are_plain_and_validated(spark_available):
    from jetwire.spark._options import OptionError, ReadOptions, WriteOptions, connect_kwargs

    o = ReadOptions({"Stream": "S", "SERVERS": "nats://a:1,nats://b:2", "user": "u", "password": "p",
                     "nkeySeed": "/x/seed", "creds": "/x/c.creds", "connectTimeout": "1500ms"})
    assert o.stream == "S"
    kw = connect_kwargs(o.conn)
    assert kw["servers"] == "nats://a:1,nats://b:2" and kw["user"] == "u" and kw["password"] == "p"
    assert kw["nkey_seed"] == "/x/seed" and kw["creds"] == "/x/c.creds" and kw["connect_timeout"] == 1.5
    assert "tls" not in kw
    with pytest.raises(OptionError, match="go together"):
        WriteOptions({"tlsCert": "/c.pem"})
    with pytest.raises(OptionError, match="'stream' is required"):
        ReadOptions({"servers": "nats://x:1"})
    with pytest.raises(OptionError, match="fetchTimeout"):
        ReadOptions({"stream": "S", "fetchTimeout": "soon"})
    with pytest.raises(OptionError, match="msgIdColumn' or 'msgIdPrefix"):
        WriteOptions({"msgIdColumn": "k", "msgIdPrefix": "p"})


def _create_stream_aio(url, ctx, **config):
    import asyncio

    import jetwire.aio

    async def run():
        async with await jetwire.aio.connect(url, tls=ctx, user="spark", password="s3cret") as nc:
            await nc.jetstream().create_stream(**config)

    asyncio.run(run())


def test_tls_with_client_certificate_and_password(spark, tmp_path):
    from jetwire.testing import NatsServer
    from jetwire.testing.certs import client_ssl_context, make_tls_files, server_tls_config

    files = make_tls_files(tmp_path / "tls")
    srv = NatsServer(tls=server_tls_config(files, verify=True),
                     auth={"user": "spark", "password": "s3cret"}).start()
    try:
        opts = {"servers": f"tls://127.0.0.1:{srv.port}", "tlsCa": files["ca_file"],
                "tlsCert": files["client_cert"], "tlsKey": files["client_key"], "user": "spark",
                "password": "s3cret"}
        # set-up through the asyncio client, reads and writes through the blocking one
        _create_stream_aio(opts["servers"], client_ssl_context(files, client_cert=True),
                           name="SECURE", subjects=["secure.>"], allow_direct=True)
        df = spark.createDataFrame([(f"secure.{i % 2}", f"v{i}") for i in range(20)],
                                   "subject string, data string")
        w = df.write.format("jetstream")
        for k, v in opts.items():
            w = w.option(k, v)
        w.mode("append").save()
        r = spark.read.format("jetstream").option("stream", "SECURE")
        for k, v in opts.items():
            r = r.option(k, v)
        assert r.load().count() == 20
        bad = spark.read.format("jetstream").option("stream", "SECURE").option("servers", opts["servers"]) \
            .option("tlsCa", files["ca_file"]).option("tlsCert", files["client_cert"]) \
            .option("tlsKey", files["client_key"]).option("user", "spark").option("password", "wrong")
        with pytest.raises(Exception, match="(?i)authori"):
            bad.load().count()
    finally:
        srv.stop()


def test_nkey_seed_file(spark, tmp_path):
    import jetwire
    from jetwire.testing import NatsServer
    from jetwire.testing.auth import new_nkey, nkey_user_auth

    user = new_nkey("user")
    seed_path = user.write_seed(tmp_path / "user.nk")
    srv = NatsServer(auth=nkey_user_auth(user)).start()
    try:
        with jetwire.connect(srv.url, nkey_seed=seed_path) as nc:
            js = nc.jetstream()
            js.create_stream(name="NK", subjects=["nk.>"], allow_direct=True)
            for i in range(7):
                js.publish("nk.x", b"%d" % i)
        df = (spark.read.format("jetstream").option("servers", srv.url).option("stream", "NK")
              .option("nkeySeed", seed_path).load())
        assert sorted(r.seq for r in df.select("seq").collect()) == list(range(1, 8))
    finally:
        srv.stop()
