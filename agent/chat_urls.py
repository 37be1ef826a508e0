from django.urls import path

from agent import chat_views

app_name = "chat"

urlpatterns = [
    path("<uuid:session_id>/send", chat_views.send, name="send"),
    path("<uuid:session_id>/earlier", chat_views.earlier, name="earlier"),
    path("<uuid:session_id>/news", chat_views.news, name="news"),
    path("<uuid:session_id>/stop", chat_views.stop, name="stop"),
    path("<uuid:session_id>/retry", chat_views.retry, name="retry"),
    path("<uuid:session_id>/approvals/<uuid:approval_id>", chat_views.approval, name="approval"),
]
