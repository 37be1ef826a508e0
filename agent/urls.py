from django.urls import path, re_path

from agent import media_views, views

app_name = "agent"

urlpatterns = [
    path("sessions", views.create_session, name="sessions"),
    path("sessions/<uuid:session_id>", views.transcript, name="transcript"),
    path("sessions/<uuid:session_id>/messages", views.post_message, name="messages"),
    path("sessions/<uuid:session_id>/stop", views.stop, name="stop"),
    path("sessions/<uuid:session_id>/retry", views.retry, name="retry"),
    path("sessions/<uuid:session_id>/approvals/<uuid:approval_id>", views.decide_approval, name="approval"),
    path("sessions/<uuid:session_id>/turns/<uuid:turn_id>/stream", views.stream, name="stream"),
    path("sessions/<uuid:session_id>/turns/<uuid:turn_id>/stream/<str:token>", views.stream, name="stream_pass"),
    path("sessions/<uuid:session_id>/attachments/<int:part_id>", media_views.attachment, name="attachment"),
    re_path(r"", views.no_such_call),  # last: anything else under the prefix answers JSON, not an HTML 404
]
